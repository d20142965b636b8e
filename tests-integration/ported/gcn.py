"""pytorch/examples gcn/main.py (https://github.com/pytorch/examples/tree/main/gcn), as a
reproduction written for this corpus: the two-layer graph convolutional network with
``torch.spmm`` over the renormalized adjacency matrix, built with the original's sparse calls
(``sparse_coo_tensor``, ``to_sparse``, ``torch.diag``), trained with Adam and NLLLoss on a
random node split. The graph is corpus_data's synthetic citation graph (a stochastic block
model with bag-of-words features) in place of the Cora download."""

import argparse
import json
import time

import torch
import torch.nn.functional as F
from torch import nn
from torch.optim import Adam

import corpus_data


class GraphConv(nn.Module):
    """H' = D^(-1/2) A D^(-1/2) H W, with an optional bias."""

    def __init__(self, input_dim, output_dim, use_bias=False):
        super(GraphConv, self).__init__()
        self.kernel = nn.Parameter(torch.Tensor(input_dim, output_dim))
        nn.init.xavier_normal_(self.kernel)
        self.bias = None
        if use_bias:
            self.bias = nn.Parameter(torch.Tensor(output_dim))
            nn.init.zeros_(self.bias)

    def forward(self, input_tensor, adj_mat):
        support = torch.mm(input_tensor, self.kernel)
        output = torch.spmm(adj_mat, support)
        if self.bias is not None:
            output = output + self.bias
        return output


class GCN(nn.Module):
    def __init__(self, input_dim, hidden_dim, output_dim, use_bias=True, dropout_p=0.1):
        super(GCN, self).__init__()
        self.gc1 = GraphConv(input_dim, hidden_dim, use_bias=use_bias)
        self.gc2 = GraphConv(hidden_dim, output_dim, use_bias=use_bias)
        self.dropout = nn.Dropout(dropout_p)

    def forward(self, input_tensor, adj_mat):
        x = self.dropout(F.relu(self.gc1(input_tensor, adj_mat)))
        x = self.gc2(x, adj_mat)
        return F.log_softmax(x, dim=1)


def load_graph(nodes, device='cpu'):
    """The original's load_cora, on the synthetic graph: row-normalized features and the
    renormalized adjacency matrix D^(-1/2) (A + I) D^(-1/2)."""
    words, classes, cites = corpus_data.citation_graph(nodes)
    features = torch.FloatTensor(words)
    scale_vector = torch.sum(features, dim=1)
    scale_vector = 1 / scale_vector
    scale_vector[scale_vector == float('inf')] = 0
    scale_vector = torch.diag(scale_vector).to_sparse()
    features = scale_vector @ features
    labels = torch.LongTensor(classes)
    V, E = len(classes), cites.shape[0]
    adj_mat = torch.sparse_coo_tensor(cites.T, torch.ones(E), (V, V), dtype=torch.int64)
    adj_mat = torch.eye(V) + adj_mat
    degree_mat = torch.sum(adj_mat, dim=1)
    degree_mat = torch.sqrt(1 / degree_mat)
    degree_mat[degree_mat == float('inf')] = 0
    degree_mat = torch.diag(degree_mat).to_sparse()
    adj_mat = degree_mat @ adj_mat @ degree_mat
    return features.to_sparse().to(device), labels.to(device), adj_mat.to_sparse().to(device)


def train_iter(epoch, model, optimizer, criterion, input, target, mask_train, mask_val,
               print_every=10):
    start_t = time.time()
    model.train()
    optimizer.zero_grad()
    output = model(*input)
    loss = criterion(output[mask_train], target[mask_train])
    loss.backward()
    optimizer.step()
    loss_train, acc_train = test(model, criterion, input, target, mask_train)
    loss_val, acc_val = test(model, criterion, input, target, mask_val)
    if epoch % print_every == 0:
        print(f'Epoch: {epoch:04d} ({(time.time() - start_t):.4f}s) loss_train: {loss_train:.4f} '
              f'acc_train: {acc_train:.4f} loss_val: {loss_val:.4f} acc_val: {acc_val:.4f}')


def test(model, criterion, input, target, mask):
    model.eval()
    with torch.no_grad():
        output = model(*input)
        output, target = output[mask], target[mask]
        loss = criterion(output, target)
        acc = (output.argmax(dim=1) == target).float().sum() / len(target)
    return loss.item(), acc.item()


if __name__ == '__main__':
    parser = argparse.ArgumentParser(description='PyTorch Graph Convolutional Network')
    parser.add_argument('--epochs', type=int, default=200)
    parser.add_argument('--lr', type=float, default=0.01)
    parser.add_argument('--l2', type=float, default=5e-4)
    parser.add_argument('--dropout-p', type=float, default=0.5)
    parser.add_argument('--hidden-dim', type=int, default=16)
    parser.add_argument('--val-every', type=int, default=20)
    parser.add_argument('--include-bias', action='store_true')
    parser.add_argument('--seed', type=int, default=42)
    parser.add_argument('--nodes', type=int, default=600)
    args = parser.parse_args()

    torch.manual_seed(args.seed)
    device = torch.device('cpu')
    features, labels, adj_mat = load_graph(args.nodes, device=device)
    idx = torch.randperm(len(labels)).to(device)
    n_test, n_val = len(labels) // 3, len(labels) // 6
    idx_test, idx_val, idx_train = idx[:n_test], idx[n_test:n_test + n_val], idx[n_test + n_val:]
    gcn = GCN(features.shape[1], args.hidden_dim, labels.max().item() + 1, args.include_bias,
              args.dropout_p).to(device)
    optimizer = Adam(gcn.parameters(), lr=args.lr, weight_decay=args.l2)
    criterion = nn.NLLLoss()
    for epoch in range(args.epochs):
        train_iter(epoch + 1, gcn, optimizer, criterion, (features, adj_mat), labels, idx_train,
                   idx_val, args.val_every)
    loss_test, acc_test = test(gcn, criterion, (features, adj_mat), labels, idx_test)
    print(f'Test set results: loss {loss_test:.4f} accuracy {acc_test:.4f}')
    print(json.dumps({"test_loss": loss_test, "test_accuracy": acc_test}))
