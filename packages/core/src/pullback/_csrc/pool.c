/* A persistent pool of worker threads that runs one row-range task at a time.
 *
 * Why: handing a kernel's rows to another thread through Python (a ThreadPoolExecutor future)
 * costs 0.1-0.2 ms on the project's 2-vCPU machines, as much as a layer norm of 2^18 elements,
 * so only very large arrays were split. Here the hand-off is a store to a shared counter that a
 * spinning worker sees within a microsecond; a worker that has gone to sleep is woken through
 * a condition variable.
 *
 * pb_parallel_for(task, ctx, n, threads) runs task(ctx, lo, hi) over 0..n in `threads` equal
 * shares. The caller runs shares too, and claims the shares no worker has claimed yet: a worker
 * that is asleep or descheduled delays nothing, the call is never slower than running serially
 * by more than the claim. Calls from several threads at once, or from inside a task, run
 * serially in the caller (the pool runs one job at a time).
 *
 * Job protocol. `generation` is even while a job's fields are stable and odd while the caller
 * rewrites them. A worker that saw generation g increments `active`, then checks that
 * `generation` is still g before it reads the job; the caller makes generation odd, then waits
 * for `active` to drop to zero before it writes. Both sides use sequentially consistent atomics,
 * so at least one of them sees the other's store (the worker backs off or the caller waits).
 */
#define _POSIX_C_SOURCE 200809L /* clock_gettime under -std=c99 */
#include <pthread.h>
#include <sched.h>
#include <stdint.h>
#include <time.h>

typedef void (*pb_task)(void *ctx, int64_t lo, int64_t hi);

#if defined(__x86_64__) || defined(__i386__)
#define CPU_RELAX() __builtin_ia32_pause()
#elif defined(__aarch64__)
#define CPU_RELAX() __asm__ __volatile__("yield")
#else
#define CPU_RELAX() ((void)0)
#endif

#define LOAD(p) __atomic_load_n((p), __ATOMIC_SEQ_CST)
#define STORE(p, v) __atomic_store_n((p), (v), __ATOMIC_SEQ_CST)
#define ADD(p, v) __atomic_fetch_add((p), (v), __ATOMIC_SEQ_CST)

#define MAX_WORKERS 63
/* How long an idle worker spins for the next job before it sleeps. A compiled step or a
 * training loop hands out a job every few tens of microseconds, so the workers stay awake
 * through a step; waking a sleeping vCPU costs tens of microseconds here. */
#define SPIN_NS 200000L

static struct {
    pthread_mutex_t busy;  /* held by the one caller whose job the pool runs */
    pthread_mutex_t sleep_lock;
    pthread_cond_t wake;
    int workers;
    int sleepers;
    /* the job */
    uint64_t generation;
    int active;
    pb_task task;
    void *ctx;
    int64_t n;
    int64_t shares;
    int64_t next;      /* the next unclaimed share */
    int64_t finished;  /* shares run to the end */
} pool = {PTHREAD_MUTEX_INITIALIZER, PTHREAD_MUTEX_INITIALIZER, PTHREAD_COND_INITIALIZER};

static int64_t now_ns(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (int64_t)t.tv_sec * 1000000000L + t.tv_nsec;
}

/* Run unclaimed shares of the current job until none is left. */
static void claim_shares(void) {
    for (;;) {
        int64_t s = ADD(&pool.next, 1);
        if (s >= pool.shares)
            return;
        pool.task(pool.ctx, pool.n * s / pool.shares, pool.n * (s + 1) / pool.shares);
        ADD(&pool.finished, 1);
    }
}

/* Wait until `generation` differs from `seen` and is even (a job is ready); return it.
 * The spin yields the core now and then: another thread that is ready to run there (BLAS's
 * own workers, which spin the same way, or another process) gets it, and this one goes on
 * polling when nothing else wants the core. */
static uint64_t next_job(uint64_t seen) {
    int64_t deadline = now_ns() + SPIN_NS;
    for (unsigned spins = 0;; spins++) {
        uint64_t g = LOAD(&pool.generation);
        if (g != seen && !(g & 1))
            return g;
        if ((spins & 63) == 63) {
            if (now_ns() > deadline)
                break;
            sched_yield();
        }
        CPU_RELAX();
    }
    pthread_mutex_lock(&pool.sleep_lock);
    ADD(&pool.sleepers, 1);
    uint64_t g;
    while ((g = LOAD(&pool.generation)) == seen || (g & 1))
        pthread_cond_wait(&pool.wake, &pool.sleep_lock);
    ADD(&pool.sleepers, -1);
    pthread_mutex_unlock(&pool.sleep_lock);
    return g;
}

static void *worker_main(void *unused) {
    (void)unused;
    uint64_t seen = LOAD(&pool.generation);
    for (;;) {
        uint64_t g = next_job(seen);
        seen = g;
        ADD(&pool.active, 1);
        if (LOAD(&pool.generation) == g)
            claim_shares();
        ADD(&pool.active, -1);
    }
    return NULL;
}

/* In a forked child only the forking thread exists: start over with no workers. */
static void after_fork_in_child(void) {
    pthread_mutex_t fresh = PTHREAD_MUTEX_INITIALIZER;
    pthread_cond_t fresh_cond = PTHREAD_COND_INITIALIZER;
    pool.busy = fresh;
    pool.sleep_lock = fresh;
    pool.wake = fresh_cond;
    pool.workers = 0;
    pool.sleepers = 0;
    pool.active = 0;
}

static void start_workers(int wanted) {
    static int fork_handler;
    if (!fork_handler) {
        pthread_atfork(NULL, NULL, after_fork_in_child);
        fork_handler = 1;
    }
    if (wanted > MAX_WORKERS)
        wanted = MAX_WORKERS;
    while (pool.workers < wanted) {
        pthread_t thread;
        pthread_attr_t attr;
        pthread_attr_init(&attr);
        pthread_attr_setdetachstate(&attr, PTHREAD_CREATE_DETACHED);
        int failed = pthread_create(&thread, &attr, worker_main, NULL);
        pthread_attr_destroy(&attr);
        if (failed)
            break; /* fewer workers: the caller claims their shares */
        pool.workers++;
    }
}

/* task(ctx, lo, hi) over rows 0..n in `threads` shares (serially when threads < 2, n < 2, or
 * the pool is running another caller's job). */
void pb_parallel_for(pb_task task, void *ctx, int64_t n, int64_t threads) {
    if (threads < 2 || n < 2 || pthread_mutex_trylock(&pool.busy) != 0) {
        task(ctx, 0, n);
        return;
    }
    start_workers((int)threads - 1);
    uint64_t g = LOAD(&pool.generation);
    STORE(&pool.generation, g + 1); /* odd: the job is being rewritten */
    while (LOAD(&pool.active) != 0)
        CPU_RELAX();
    pool.task = task;
    pool.ctx = ctx;
    pool.n = n;
    pool.shares = threads < n ? threads : n;
    STORE(&pool.finished, 0);
    STORE(&pool.next, 0);
    STORE(&pool.generation, g + 2); /* even: ready */
    if (LOAD(&pool.sleepers) > 0) {
        pthread_mutex_lock(&pool.sleep_lock);
        pthread_cond_broadcast(&pool.wake);
        pthread_mutex_unlock(&pool.sleep_lock);
    }
    claim_shares();
    for (unsigned spins = 0; LOAD(&pool.finished) < pool.shares; spins++) {
        if ((spins & 1023) == 1023)
            sched_yield(); /* a worker holding a share may be waiting for this core */
        else
            CPU_RELAX();
    }
    pthread_mutex_unlock(&pool.busy);
}

