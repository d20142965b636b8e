"""pytorch/examples gat/main.py (https://github.com/pytorch/examples/tree/main/gat), as a
reproduction written for this corpus: the two-layer graph attention network (multi-head
attention scores masked by the adjacency matrix, ELU, log-softmax), trained with Adam and
NLLLoss on a random node split, on corpus_data's synthetic citation graph (built with the
original's sparse calls) in place of the Cora download."""

import argparse
import json

import torch
import torch.nn.functional as F
from torch import nn
from torch.optim import Adam

import corpus_data


class GraphAttentionLayer(nn.Module):
    def __init__(self, in_features: int, out_features: int, n_heads: int, concat: bool = False,
                 dropout: float = 0.4, leaky_relu_slope: float = 0.2):
        super(GraphAttentionLayer, self).__init__()
        self.n_heads = n_heads
        self.concat = concat
        self.dropout = dropout
        if concat:  # the heads' outputs are concatenated
            self.out_features = out_features
            assert out_features % n_heads == 0
            self.n_hidden = out_features // n_heads
        else:  # averaged over the heads
            self.n_hidden = out_features
        self.W = nn.Parameter(torch.empty(size=(in_features, self.n_hidden * n_heads)))
        self.a = nn.Parameter(torch.empty(size=(n_heads, 2 * self.n_hidden, 1)))
        self.leakyrelu = nn.LeakyReLU(leaky_relu_slope)
        self.softmax = nn.Softmax(dim=1)
        self.reset_parameters()

    def reset_parameters(self):
        nn.init.xavier_normal_(self.W)
        nn.init.xavier_normal_(self.a)

    def _get_attention_scores(self, h_transformed: torch.Tensor):
        source_scores = torch.matmul(h_transformed, self.a[:, :self.n_hidden, :])
        target_scores = torch.matmul(h_transformed, self.a[:, self.n_hidden:, :])
        e = source_scores + target_scores.mT
        return self.leakyrelu(e)

    def forward(self, h: torch.Tensor, adj_mat: torch.Tensor):
        n_nodes = h.shape[0]
        h_transformed = torch.mm(h, self.W)
        h_transformed = F.dropout(h_transformed, self.dropout, training=self.training)
        h_transformed = h_transformed.view(n_nodes, self.n_heads, self.n_hidden).permute(1, 0, 2)
        e = self._get_attention_scores(h_transformed)
        connectivity_mask = -9e16 * torch.ones_like(e)
        e = torch.where(adj_mat > 0, e, connectivity_mask)
        attention = F.softmax(e, dim=-1)
        attention = F.dropout(attention, self.dropout, training=self.training)
        h_prime = torch.matmul(attention, h_transformed)
        if self.concat:
            return h_prime.permute(1, 0, 2).contiguous().view(n_nodes, self.out_features)
        return h_prime.mean(dim=0)


class GAT(nn.Module):
    def __init__(self, in_features, n_hidden, n_heads, num_classes, concat=False, dropout=0.4,
                 leaky_relu_slope=0.2):
        super(GAT, self).__init__()
        self.gat1 = GraphAttentionLayer(in_features=in_features, out_features=n_hidden,
                                        n_heads=n_heads, concat=concat, dropout=dropout,
                                        leaky_relu_slope=leaky_relu_slope)
        self.gat2 = GraphAttentionLayer(in_features=n_hidden, out_features=num_classes,
                                        n_heads=1, concat=False, dropout=dropout,
                                        leaky_relu_slope=leaky_relu_slope)

    def forward(self, input_tensor: torch.Tensor, adj_mat: torch.Tensor):
        x = F.elu(self.gat1(input_tensor, adj_mat))
        x = self.gat2(x, adj_mat)
        return F.log_softmax(x, dim=1)


def load_graph(nodes, device='cpu'):
    """The original's load_cora on the synthetic graph: row-normalized features, A + I."""
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
    return features.to(device), labels.to(device), adj_mat.to(device)


def train_iter(epoch, model, optimizer, criterion, input, target, mask_train, mask_val,
               print_every=10):
    model.train()
    optimizer.zero_grad()
    output = model(*input)
    loss = criterion(output[mask_train], target[mask_train])
    loss.backward()
    optimizer.step()
    loss_train, acc_train = test(model, criterion, input, target, mask_train)
    loss_val, acc_val = test(model, criterion, input, target, mask_val)
    if epoch % print_every == 0:
        print(f'Epoch: {epoch:04d} loss_train: {loss_train:.4f} acc_train: {acc_train:.4f} '
              f'loss_val: {loss_val:.4f} acc_val: {acc_val:.4f}')


def test(model, criterion, input, target, mask):
    model.eval()
    with torch.no_grad():
        output = model(*input)
        output, target = output[mask], target[mask]
        loss = criterion(output, target)
        acc = (output.argmax(dim=1) == target).float().sum() / len(target)
    return loss.item(), acc.item()


if __name__ == '__main__':
    parser = argparse.ArgumentParser(description='PyTorch Graph Attention Network')
    parser.add_argument('--epochs', type=int, default=300)
    parser.add_argument('--lr', type=float, default=0.005)
    parser.add_argument('--l2', type=float, default=5e-4)
    parser.add_argument('--dropout-p', type=float, default=0.6)
    parser.add_argument('--hidden-dim', type=int, default=64)
    parser.add_argument('--num-heads', type=int, default=8)
    parser.add_argument('--concat-heads', action='store_true')
    parser.add_argument('--val-every', type=int, default=20)
    parser.add_argument('--seed', type=int, default=13)
    parser.add_argument('--nodes', type=int, default=600)
    args = parser.parse_args()

    torch.manual_seed(args.seed)
    device = torch.device('cpu')
    features, labels, adj_mat = load_graph(args.nodes, device=device)
    idx = torch.randperm(len(labels)).to(device)
    n_test, n_val = len(labels) // 3, len(labels) // 6
    idx_test, idx_val, idx_train = idx[:n_test], idx[n_test:n_test + n_val], idx[n_test + n_val:]
    gat_net = GAT(in_features=features.shape[1], n_hidden=args.hidden_dim,
                  n_heads=args.num_heads, num_classes=labels.max().item() + 1,
                  concat=args.concat_heads, dropout=args.dropout_p,
                  leaky_relu_slope=0.2).to(device)
    optimizer = Adam(gat_net.parameters(), lr=args.lr, weight_decay=args.l2)
    criterion = nn.NLLLoss()
    for epoch in range(args.epochs):
        train_iter(epoch + 1, gat_net, optimizer, criterion, (features, adj_mat), labels,
                   idx_train, idx_val, args.val_every)
    loss_test, acc_test = test(gat_net, criterion, (features, adj_mat), labels, idx_test)
    print(f'Test set results: loss {loss_test:.4f} accuracy {acc_test:.4f}')
    print(json.dumps({"test_loss": loss_test, "test_accuracy": acc_test}))
