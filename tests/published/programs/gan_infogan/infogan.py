"""InfoGAN, after eriklindernoren/PyTorch-GAN implementations/infogan/infogan.py (commit 36d3c77, MIT): written
again for the doctor's corpus (tests/published/README.md). As published: a convolutional generator fed
noise, a one-hot label and a continuous code; a discriminator with three heads (validity, label, code);
three Adams: G's, D's, and an information optimizer over both networks' parameters
(``itertools.chain``); the generator's loss reaches D's parameters too, each optimizer clears what it
holds before its backward. Images are sampled without no_grad every ``sample_interval`` batches (batch 0
included). Data: the torchvision stand-in's MNIST."""

import argparse
import itertools
import os

import numpy as np
import torch
import torchvision.transforms as transforms
from torch import nn
from torch.autograd import Variable
from torchvision import datasets
from torchvision.utils import save_image

for folder in ("images/static/", "images/varying_c1/", "images/varying_c2/"):
    os.makedirs(folder, exist_ok=True)

parser = argparse.ArgumentParser()
parser.add_argument("--n_epochs", type=int, default=200)
parser.add_argument("--batch_size", type=int, default=64)
parser.add_argument("--lr", type=float, default=0.0002)
parser.add_argument("--b1", type=float, default=0.5)
parser.add_argument("--b2", type=float, default=0.999)
parser.add_argument("--n_cpu", type=int, default=8)
parser.add_argument("--latent_dim", type=int, default=62)
parser.add_argument("--code_dim", type=int, default=2)
parser.add_argument("--n_classes", type=int, default=10)
parser.add_argument("--img_size", type=int, default=32)
parser.add_argument("--channels", type=int, default=1)
parser.add_argument("--sample_interval", type=int, default=400)
opt = parser.parse_args()

FloatTensor = torch.FloatTensor
LongTensor = torch.LongTensor


def weights_init_normal(m):
    classname = m.__class__.__name__
    if "Conv" in classname:
        torch.nn.init.normal_(m.weight.data, 0.0, 0.02)
    elif "BatchNorm" in classname:
        torch.nn.init.normal_(m.weight.data, 1.0, 0.02)
        torch.nn.init.constant_(m.bias.data, 0.0)


def to_categorical(y, num_columns):
    """One-hot rows, as a Variable."""
    y_cat = np.zeros((y.shape[0], num_columns))
    y_cat[range(y.shape[0]), y] = 1.0
    return Variable(FloatTensor(y_cat))


class Generator(nn.Module):
    def __init__(self):
        super().__init__()
        input_dim = opt.latent_dim + opt.n_classes + opt.code_dim
        self.init_size = opt.img_size // 4
        self.l1 = nn.Sequential(nn.Linear(input_dim, 128 * self.init_size**2))
        self.conv_blocks = nn.Sequential(
            nn.BatchNorm2d(128),
            nn.Upsample(scale_factor=2),
            nn.Conv2d(128, 128, 3, stride=1, padding=1),
            nn.BatchNorm2d(128, 0.8),
            nn.LeakyReLU(0.2, inplace=True),
            nn.Upsample(scale_factor=2),
            nn.Conv2d(128, 64, 3, stride=1, padding=1),
            nn.BatchNorm2d(64, 0.8),
            nn.LeakyReLU(0.2, inplace=True),
            nn.Conv2d(64, opt.channels, 3, stride=1, padding=1),
            nn.Tanh(),
        )

    def forward(self, noise, labels, code):
        out = self.l1(torch.cat((noise, labels, code), -1))
        return self.conv_blocks(out.view(out.shape[0], 128, self.init_size, self.init_size))


class Discriminator(nn.Module):
    def __init__(self):
        super().__init__()

        def discriminator_block(in_filters, out_filters, bn=True):
            block = [nn.Conv2d(in_filters, out_filters, 3, 2, 1), nn.LeakyReLU(0.2, inplace=True), nn.Dropout2d(0.25)]
            if bn:
                block.append(nn.BatchNorm2d(out_filters, 0.8))
            return block

        self.conv_blocks = nn.Sequential(
            *discriminator_block(opt.channels, 16, bn=False),
            *discriminator_block(16, 32),
            *discriminator_block(32, 64),
            *discriminator_block(64, 128),
        )
        ds_size = opt.img_size // 2**4
        self.adv_layer = nn.Sequential(nn.Linear(128 * ds_size**2, 1))
        self.aux_layer = nn.Sequential(nn.Linear(128 * ds_size**2, opt.n_classes), nn.Softmax(dim=1))
        self.latent_layer = nn.Sequential(nn.Linear(128 * ds_size**2, opt.code_dim))

    def forward(self, img):
        out = self.conv_blocks(img).view(img.shape[0], -1)
        return self.adv_layer(out), self.aux_layer(out), self.latent_layer(out)


adversarial_loss = torch.nn.MSELoss()
categorical_loss = torch.nn.CrossEntropyLoss()
continuous_loss = torch.nn.MSELoss()
lambda_cat = 1
lambda_con = 0.1

generator = Generator()
discriminator = Discriminator()
generator.apply(weights_init_normal)
discriminator.apply(weights_init_normal)

dataloader = torch.utils.data.DataLoader(
    datasets.MNIST(
        "../../data/mnist",
        train=True,
        download=True,
        transform=transforms.Compose(
            [transforms.Resize(opt.img_size), transforms.ToTensor(), transforms.Normalize([0.5], [0.5])]
        ),
    ),
    batch_size=opt.batch_size,
    shuffle=True,
)

optimizer_G = torch.optim.Adam(generator.parameters(), lr=opt.lr, betas=(opt.b1, opt.b2))
optimizer_D = torch.optim.Adam(discriminator.parameters(), lr=opt.lr, betas=(opt.b1, opt.b2))
optimizer_info = torch.optim.Adam(
    itertools.chain(generator.parameters(), discriminator.parameters()), lr=opt.lr, betas=(opt.b1, opt.b2)
)

static_z = Variable(FloatTensor(np.zeros((opt.n_classes**2, opt.latent_dim))))
static_label = to_categorical(
    np.array([num for _ in range(opt.n_classes) for num in range(opt.n_classes)]), num_columns=opt.n_classes
)
static_code = Variable(FloatTensor(np.zeros((opt.n_classes**2, opt.code_dim))))


def sample_image(n_row, batches_done):
    """A grid of generated digits, and two grids varying one code each."""
    z = Variable(FloatTensor(np.random.normal(0, 1, (n_row**2, opt.latent_dim))))
    save_image(generator(z, static_label, static_code).data, f"images/static/{batches_done}.png", nrow=n_row)
    zeros = np.zeros((n_row**2, 1))
    c_varied = np.repeat(np.linspace(-1, 1, n_row)[:, np.newaxis], n_row, 0)
    c1 = Variable(FloatTensor(np.concatenate((c_varied, zeros), -1)))
    c2 = Variable(FloatTensor(np.concatenate((zeros, c_varied), -1)))
    save_image(generator(static_z, static_label, c1).data, f"images/varying_c1/{batches_done}.png", nrow=n_row)
    save_image(generator(static_z, static_label, c2).data, f"images/varying_c2/{batches_done}.png", nrow=n_row)


for epoch in range(opt.n_epochs):
    for i, (imgs, labels) in enumerate(dataloader):
        batch_size = imgs.shape[0]
        valid = Variable(FloatTensor(batch_size, 1).fill_(1.0), requires_grad=False)
        fake = Variable(FloatTensor(batch_size, 1).fill_(0.0), requires_grad=False)
        real_imgs = Variable(imgs.type(FloatTensor))
        labels = to_categorical(labels.numpy(), num_columns=opt.n_classes)

        # the generator
        optimizer_G.zero_grad()
        z = Variable(FloatTensor(np.random.normal(0, 1, (batch_size, opt.latent_dim))))
        label_input = to_categorical(np.random.randint(0, opt.n_classes, batch_size), num_columns=opt.n_classes)
        code_input = Variable(FloatTensor(np.random.uniform(-1, 1, (batch_size, opt.code_dim))))
        gen_imgs = generator(z, label_input, code_input)
        validity, _, _ = discriminator(gen_imgs)
        g_loss = adversarial_loss(validity, valid)
        g_loss.backward()
        optimizer_G.step()

        # the discriminator
        optimizer_D.zero_grad()
        real_pred, _, _ = discriminator(real_imgs)
        d_real_loss = adversarial_loss(real_pred, valid)
        fake_pred, _, _ = discriminator(gen_imgs.detach())
        d_fake_loss = adversarial_loss(fake_pred, fake)
        d_loss = (d_real_loss + d_fake_loss) / 2
        d_loss.backward()
        optimizer_D.step()

        # the information loss, through both networks
        optimizer_info.zero_grad()
        sampled_labels = np.random.randint(0, opt.n_classes, batch_size)
        gt_labels = Variable(LongTensor(sampled_labels), requires_grad=False)
        z = Variable(FloatTensor(np.random.normal(0, 1, (batch_size, opt.latent_dim))))
        label_input = to_categorical(sampled_labels, num_columns=opt.n_classes)
        code_input = Variable(FloatTensor(np.random.uniform(-1, 1, (batch_size, opt.code_dim))))
        gen_imgs = generator(z, label_input, code_input)
        _, pred_label, pred_code = discriminator(gen_imgs)
        info_loss = lambda_cat * categorical_loss(pred_label, gt_labels) + lambda_con * continuous_loss(
            pred_code, code_input
        )
        info_loss.backward()
        optimizer_info.step()

        print(
            f"[Epoch {epoch}] [Batch {i}] [D loss: {d_loss.item():f}] [G loss: {g_loss.item():f}] [info: {info_loss.item():f}]"
        )
        batches_done = epoch * len(dataloader) + i
        if batches_done % opt.sample_interval == 0:
            sample_image(n_row=10, batches_done=batches_done)
