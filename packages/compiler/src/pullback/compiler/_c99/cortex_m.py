"""The export on a microcontroller, emulated: an Arm Cortex-M4 with its single-precision FPU
(``arm-none-eabi-gcc -mcpu=cortex-m4 -mthumb -mfloat-abi=hard -mfpu=fpv4-sp-d16``, newlib),
run by QEMU as the MPS2 AN386 board (``qemu-system-arm -M mps2-an386``), printing through Arm
semihosting.

The board's memory map: 4 MiB of code memory at 0 (the "flash": vectors, code, constants and
the initial values of data) and 4 MiB of SRAM at 0x20000000 (data, the zero-initialised arena,
the stack). The startup code is the usual one: enable the FPU, copy ``.data`` from flash,
clear ``.bss``, open the semihosting handles, call ``main`` and exit with its status (QEMU exits
with it). ``arm-none-eabi-size`` of the model's own object gives its flash (text + data) and
RAM (data + bss); the whole program adds the harness and newlib's printf.

Debian packages: ``gcc-arm-none-eabi``, ``libnewlib-arm-none-eabi``, ``qemu-system-arm``.
"""

from __future__ import annotations

import shutil
import subprocess
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Sequence

import numpy as np

from pullback._files import write_atomic

from .build import STRICT_FLAGS, run_compiler_into
from .program import main_source

if TYPE_CHECKING:
    from . import CExport

CROSS_COMPILER = "arm-none-eabi-gcc"
SIZE_TOOL = "arm-none-eabi-size"
EMULATOR = "qemu-system-arm"
CPU_FLAGS = ("-mcpu=cortex-m4", "-mthumb", "-mfloat-abi=hard", "-mfpu=fpv4-sp-d16")
PACKAGES = "gcc-arm-none-eabi libnewlib-arm-none-eabi qemu-system-arm"

_STARTUP = r"""/* Cortex-M4 startup for QEMU's mps2-an386 (semihosting). */
#include <stdint.h>
#include <stdlib.h>

extern uint32_t __data_load, __data_start, __data_end, __bss_start__, __bss_end__;
extern uint32_t __stack_top;
extern int main(void);
extern void initialise_monitor_handles(void);

void _init(void) {}
void _fini(void) {}

void Reset_Handler(void) {
    /* full access to the FPU (coprocessors 10 and 11) before any float instruction */
    *(volatile uint32_t *)0xE000ED88 |= 0xFu << 20;
    __asm volatile("dsb\n isb");
    uint32_t *src = &__data_load, *dst = &__data_start;
    while (dst < &__data_end) *dst++ = *src++;
    for (dst = &__bss_start__; dst < &__bss_end__;) *dst++ = 0;
    initialise_monitor_handles();
    exit(main());
}

static void Fault_Handler(void) { exit(99); }

__attribute__((section(".vectors"), used)) static void (*const vectors[16])(void) = {
    (void (*)(void))&__stack_top, Reset_Handler, Fault_Handler, Fault_Handler,
    Fault_Handler, Fault_Handler, Fault_Handler, 0, 0, 0, 0, Fault_Handler, Fault_Handler, 0,
    Fault_Handler, Fault_Handler,
};
"""

_LINKER_SCRIPT = """MEMORY {
    FLASH (rx) : ORIGIN = 0x00000000, LENGTH = 4M
    RAM (rwx) : ORIGIN = 0x20000000, LENGTH = 4M
}
ENTRY(Reset_Handler)
SECTIONS {
    .text : { KEEP(*(.vectors)) *(.text*) *(.rodata*) . = ALIGN(4); } > FLASH
    .ARM.extab : { *(.ARM.extab*) } > FLASH
    .ARM.exidx : { *(.ARM.exidx*) } > FLASH
    .data : { __data_start = .; *(.data*) . = ALIGN(4); __data_end = .; } > RAM AT > FLASH
    __data_load = LOADADDR(.data);
    .bss (NOLOAD) : { __bss_start__ = .; *(.bss*) *(COMMON) . = ALIGN(4); __bss_end__ = .; } > RAM
    . = ALIGN(8);
    end = .;
    __end__ = .;
    __stack_top = ORIGIN(RAM) + LENGTH(RAM);
}
"""


def unavailable() -> str | None:
    """Why the emulated Cortex-M4 cannot be used here (None: it can)."""
    for tool in (CROSS_COMPILER, SIZE_TOOL, EMULATOR):
        if shutil.which(tool) is None:
            return f"{tool} is not installed (Debian: apt-get install {PACKAGES})"
    specs = subprocess.run([CROSS_COMPILER, *CPU_FLAGS, "-print-file-name=rdimon.specs"],
                           capture_output=True, text=True).stdout.strip()
    if not Path(specs).is_file():
        return f"newlib's rdimon.specs is missing (Debian: apt-get install {PACKAGES})"
    return None


@dataclass
class Sizes:
    """``arm-none-eabi-size`` of one file: flash is text + data, RAM is data + bss."""

    text: int
    data: int
    bss: int

    @property
    def flash(self) -> int:
        return self.text + self.data

    @property
    def ram(self) -> int:
        return self.data + self.bss


def sizes(path: Path) -> Sizes:
    done = subprocess.run([SIZE_TOOL, str(path)], capture_output=True, text=True, check=True)
    text, data, bss = (int(v) for v in done.stdout.splitlines()[1].split()[:3])
    return Sizes(text, data, bss)


@dataclass
class CortexM4Build:
    """A cross-compiled program and the sizes of the model (its object) and of the whole."""

    elf: Path
    model: Sizes
    program: Sizes


def build(export: CExport, samples: Sequence[Sequence[np.ndarray]], out_dir: str | Path,
          optimization: str = "-O2") -> CortexM4Build:
    """Cross-compile the export (with the strict C99 flags) and a ``main`` that prints its
    outputs on ``samples``."""
    folder = Path(out_dir)  # the folder the user named (a link to one is theirs to make)
    folder.mkdir(parents=True, exist_ok=True)
    write_atomic(folder / "startup.c", _STARTUP, sync=False)
    write_atomic(folder / "mps2_an386.ld", _LINKER_SCRIPT, sync=False)
    main = folder / f"{export.name}_main.c"
    write_atomic(main, main_source(export, samples), sync=False)
    strict = [f for f in STRICT_FLAGS if not f.startswith("-O")] + [optimization]
    model_object = run_compiler_into(
        [CROSS_COMPILER, *CPU_FLAGS, *strict, "-c", str(export.source)],
        folder / f"{export.name}.m4.o", f"cross-compiling {export.source.name}")
    elf = run_compiler_into(
        [CROSS_COMPILER, *CPU_FLAGS, optimization, "-std=gnu99", "--specs=rdimon.specs",
         "-nostartfiles", "-T", str(folder / "mps2_an386.ld"), f"-I{export.source.parent}",
         str(folder / "startup.c"), str(main), str(model_object), "-lm"],
        folder / f"{export.name}.elf", "linking the Cortex-M4 program")
    return CortexM4Build(elf, sizes(model_object), sizes(elf))


def run(elf: Path, timeout: float = 300) -> str:
    """Run on the emulated board; what the program printed through semihosting."""
    done = subprocess.run([EMULATOR, "-M", "mps2-an386", "-cpu", "cortex-m4", "-display", "none",
                           "-monitor", "none", "-serial", "none", "-semihosting-config",
                           "enable=on,target=native", "-kernel", str(elf)],
                          capture_output=True, text=True, timeout=timeout)
    if done.returncode != 0:
        raise RuntimeError(f"{elf.name} on {EMULATOR} exited with {done.returncode}: "
                           f"{done.stderr[-2000:]}{done.stdout[-2000:]}")
    return done.stdout
