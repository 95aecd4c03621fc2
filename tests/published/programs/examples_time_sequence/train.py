"""Sine waves predicted by two stacked LSTM cells, after pytorch/examples time_sequence_prediction/train.py
(commit 77f55b9, BSD-3-Clause): written again for the doctor's corpus (tests/published/README.md). As
published: float64 model, the whole data set in one batch, LBFGS with a closure (zero_grad, forward,
backward inside it; LBFGS calls it up to 20 times a step), then a prediction 1000 steps into the future
under no_grad, plotted. Data: ``traindata.pt`` written as generate_sine_wave.py writes it, smaller
(tests/published/data.py); plotting: the matplotlib stand-in."""

import argparse

import matplotlib
import numpy as np
import torch
import torch.optim as optim
from torch import nn

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402


class Sequence(nn.Module):
    def __init__(self):
        super().__init__()
        self.lstm1 = nn.LSTMCell(1, 51)
        self.lstm2 = nn.LSTMCell(51, 51)
        self.linear = nn.Linear(51, 1)

    def forward(self, input, future=0):
        outputs = []
        h_t = torch.zeros(input.size(0), 51, dtype=torch.double)
        c_t = torch.zeros(input.size(0), 51, dtype=torch.double)
        h_t2 = torch.zeros(input.size(0), 51, dtype=torch.double)
        c_t2 = torch.zeros(input.size(0), 51, dtype=torch.double)
        for input_t in input.split(1, dim=1):
            h_t, c_t = self.lstm1(input_t, (h_t, c_t))
            h_t2, c_t2 = self.lstm2(h_t, (h_t2, c_t2))
            output = self.linear(h_t2)
            outputs += [output]
        for _ in range(future):  # feed the prediction back in
            h_t, c_t = self.lstm1(output, (h_t, c_t))
            h_t2, c_t2 = self.lstm2(h_t, (h_t2, c_t2))
            output = self.linear(h_t2)
            outputs += [output]
        return torch.cat(outputs, dim=1)


if __name__ == "__main__":
    parser = argparse.ArgumentParser()
    parser.add_argument("--steps", type=int, default=15)
    parser.add_argument("--future", type=int, default=1000)
    opt = parser.parse_args()
    np.random.seed(0)
    torch.manual_seed(0)
    data = torch.load("traindata.pt")
    input = torch.from_numpy(data[3:, :-1])
    target = torch.from_numpy(data[3:, 1:])
    test_input = torch.from_numpy(data[:3, :-1])
    test_target = torch.from_numpy(data[:3, 1:])
    seq = Sequence()
    seq.double()
    criterion = nn.MSELoss()
    optimizer = optim.LBFGS(seq.parameters(), lr=0.8)
    for i in range(opt.steps):
        print("STEP:", i)

        def closure():
            optimizer.zero_grad()
            out = seq(input)
            loss = criterion(out, target)
            print("loss:", loss.item())
            loss.backward()
            return loss

        optimizer.step(closure)
        with torch.no_grad():  # predicting needs no gradient
            future = opt.future
            pred = seq(test_input, future=future)
            loss = criterion(pred[:, :-future], test_target)
            print("test loss:", loss.item())
            y = pred.detach().numpy()
        plt.figure(figsize=(30, 10))
        plt.title("Predict future values for time sequences")
        for row, color in zip(y, "rgb"):
            plt.plot(np.arange(input.size(1)), row[: input.size(1)], color, linewidth=2.0)
            plt.plot(np.arange(input.size(1), input.size(1) + future), row[input.size(1) :], color + ":")
        plt.savefig(f"predict{i}.pdf")
        plt.close()
