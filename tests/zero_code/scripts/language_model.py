"""A word-level LSTM language model on synthetic tokens: two epochs, validation after each.

Batches are slices of one long token tensor (no DataLoader), and the weights are updated by
hand after clipping the gradients, the way many language-model examples are written.
"""

import math
import time

import torch
import torch.nn as nn

torch.manual_seed(0)
VOCAB, EMBED, HIDDEN, BPTT, BATCH = 64, 16, 32, 12, 8
LR, CLIP, EPOCHS = 5.0, 0.25, 2


def batchify(tokens, batch):
    usable = tokens.size(0) // batch * batch
    return tokens[:usable].view(batch, -1).t().contiguous()


def slice_of(source, i):
    length = min(BPTT, len(source) - 1 - i)
    return source[i:i + length], source[i + 1:i + 1 + length].reshape(-1)


class LanguageModel(nn.Module):
    def __init__(self):
        super().__init__()
        self.drop = nn.Dropout(0.2)
        self.encoder = nn.Embedding(VOCAB, EMBED)
        self.rnn = nn.LSTM(EMBED, HIDDEN)
        self.decoder = nn.Linear(HIDDEN, VOCAB)

    def forward(self, tokens, hidden):
        output, hidden = self.rnn(self.drop(self.encoder(tokens)), hidden)
        return self.decoder(self.drop(output)).view(-1, VOCAB), hidden

    def init_hidden(self, batch):
        return (torch.zeros(1, batch, HIDDEN), torch.zeros(1, batch, HIDDEN))


def repackage(hidden):
    return tuple(h.detach() for h in hidden)


train_data = batchify(torch.randint(0, VOCAB, (4000,)), BATCH)
val_data = batchify(torch.randint(0, VOCAB, (1200,)), BATCH)
model = LanguageModel()
criterion = nn.NLLLoss()


def evaluate(source):
    model.eval()
    total = 0.0
    hidden = model.init_hidden(BATCH)
    with torch.no_grad():
        for i in range(0, source.size(0) - 1, BPTT):
            data, targets = slice_of(source, i)
            output, hidden = model(data, hidden)
            total += len(data) * criterion(torch.log_softmax(output, -1), targets).item()
            time.sleep(0.004)  # a bigger model would take this long
    return total / (len(source) - 1)


def train():
    model.train()
    hidden = model.init_hidden(BATCH)
    for i in range(0, train_data.size(0) - 1, BPTT):
        data, targets = slice_of(train_data, i)
        hidden = repackage(hidden)
        model.zero_grad()
        output, hidden = model(data, hidden)
        loss = criterion(torch.log_softmax(output, -1), targets)
        loss.backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), CLIP)
        for p in model.parameters():
            p.data.add_(p.grad, alpha=-LR)
        time.sleep(0.004)


for epoch in range(1, EPOCHS + 1):
    started = time.time()
    train()
    val_loss = evaluate(val_data)
    print(f"| end of epoch {epoch:3d} | time: {time.time() - started:5.2f}s | valid loss {val_loss:5.2f} | "
          f"valid ppl {math.exp(val_loss):8.2f}")
