"""The corpus: every program run (a folder under programs/, its script, the arguments that keep it small,
its data stand-ins) and every bug planted in one of them. README.md beside this file says how to add one."""

from __future__ import annotations

from tests.published import data
from tests.published.corpus import Bug, Program

MNIST = {"STANDIN_TRAIN": "16", "STANDIN_TEST": "8"}
GAN_DATA = {"STANDIN_TRAIN": "12"}
WLM = ("--epochs", "2", "--emsize", "8", "--nhid", "8", "--nlayers", "1", "--bptt", "5", "--batch_size", "4")
WLM += ("--log-interval", "1", "--save", "model.pt")
GAN = ("--n_epochs", "1", "--batch_size", "4", "--latent_dim", "8", "--n_critic", "2", "--sample_interval", "1000")

PROGRAMS: dict[str, Program] = {
    p.name: p
    for p in (
        Program(
            "mnist",
            "examples_mnist/main.py",
            ("--epochs", "1", "--batch-size", "8", "--test-batch-size", "8", "--log-interval", "1", "--no-accel"),
            env=MNIST,
            source="pytorch/examples mnist/main.py @ 77f55b9",
        ),
        Program(
            "vae",
            "examples_vae/main.py",
            ("--epochs", "1", "--batch-size", "8", "--no-accel", "--log-interval", "1"),
            env=MNIST,
            source="pytorch/examples vae/main.py @ 77f55b9",
        ),
        Program(
            "mnist_rnn",
            "examples_mnist_rnn/main.py",
            ("--epochs", "1", "--batch-size", "8", "--test-batch-size", "8", "--log-interval", "1"),
            env=MNIST,
            source="pytorch/examples mnist_rnn/main.py @ 77f55b9",
        ),
        Program(
            "forward_forward",
            "examples_forward_forward/main.py",
            ("--epochs", "3", "--train_size", "16", "--test_size", "8", "--no_accel", "--log-interval", "1"),
            env=MNIST,
            source="pytorch/examples mnist_forward_forward/main.py @ 77f55b9",
        ),
        Program(
            "dcgan",
            "examples_dcgan/main.py",
            ("--dataset", "fake", "--batchSize", "4", "--niter", "1", "--ngf", "4", "--ndf", "4", "--nz", "8"),
            env={"STANDIN_FAKE": "8"},
            source="pytorch/examples dcgan/main.py @ 77f55b9",
        ),
        Program(
            "reinforce",
            "examples_reinforce/reinforce.py",
            ("--seed", "1", "--log-interval", "1"),
            source="pytorch/examples reinforcement_learning/reinforce.py @ 77f55b9",
        ),
        Program(
            "actor_critic",
            "examples_actor_critic/actor_critic.py",
            ("--seed", "1", "--log-interval", "1"),
            source="pytorch/examples reinforcement_learning/actor_critic.py @ 77f55b9",
        ),
        Program("regression", "examples_regression/main.py", source="pytorch/examples regression/main.py @ 77f55b9"),
        Program(
            "time_sequence",
            "examples_time_sequence/train.py",
            ("--steps", "2", "--future", "20"),
            data=(data.sine_waves,),
            env={"TORCH_FORCE_NO_WEIGHTS_ONLY_LOAD": "1"},
            source="pytorch/examples time_sequence_prediction/train.py @ 77f55b9",
        ),
        Program(
            "word_lm_lstm",
            "examples_word_language_model/main.py",
            (*WLM, "--model", "LSTM"),
            data=(data.word_corpus,),
            source="pytorch/examples word_language_model/main.py @ 77f55b9",
        ),
        Program(
            "word_lm_transformer",
            "examples_word_language_model/main.py",
            (*WLM, "--model", "Transformer", "--nhead", "2"),
            data=(data.word_corpus,),
            source="pytorch/examples word_language_model/main.py @ 77f55b9",
        ),
        Program(
            "word_lm_gru_tied",
            "examples_word_language_model/main.py",
            (*WLM, "--model", "GRU", "--tied"),
            data=(data.word_corpus,),
            source="pytorch/examples word_language_model/main.py @ 77f55b9",
        ),
        Program(
            "word_lm_adamw",
            "examples_word_language_model/main.py",
            (*WLM, "--model", "LSTM", "--use-optimizer", "--lr", "0.01"),
            data=(data.word_corpus,),
            source="pytorch/examples word_language_model/main.py @ 77f55b9",
        ),
        Program(
            "hogwild",
            "examples_hogwild/main.py",
            ("--num-processes", "1", "--epochs", "1", "--batch-size", "8", "--test-batch-size", "8", "--dry-run"),
            env=MNIST,
            source="pytorch/examples mnist_hogwild/main.py @ 77f55b9",
        ),
        Program(
            "nanogpt",
            "nanogpt/train.py",
            (
                "--device=cpu",
                "--compile=False",
                "--dtype=float32",
                "--dataset=shakespeare_char",
                "--n_layer=1",
                "--n_head=2",
                "--n_embd=16",
                "--block_size=16",
                "--batch_size=4",
                "--gradient_accumulation_steps=2",
                "--max_iters=3",
                "--eval_interval=2",
                "--eval_iters=1",
                "--warmup_iters=1",
                "--lr_decay_iters=3",
                "--always_save_checkpoint=False",
            ),
            data=(data.token_files,),
            source="karpathy/nanoGPT train.py, model.py, configurator.py @ 3adf61e",
        ),
        Program(
            "mingpt_adder",
            "mingpt/projects/adder/adder.py",
            ("--data.ndigit=1", "--trainer.batch_size=4", "--trainer.max_iters=3", "--trainer.num_workers=0"),
            paths=(".",),
            source="karpathy/minGPT projects/adder/adder.py and mingpt/ @ 37baab7",
        ),
        Program("wgan", "gan_wgan/wgan.py", GAN, env=GAN_DATA, source="eriklindernoren/PyTorch-GAN wgan @ 36d3c77"),
        Program(
            "wgan_gp",
            "gan_wgan_gp/wgan_gp.py",
            (*GAN, "--img_size", "8"),
            env=GAN_DATA,
            source="eriklindernoren/PyTorch-GAN wgan_gp @ 36d3c77",
        ),
        Program(
            "wgan_div",
            "gan_wgan_div/wgan_div.py",
            (*GAN, "--img_size", "8"),
            env=GAN_DATA,
            source="eriklindernoren/PyTorch-GAN wgan_div @ 36d3c77",
        ),
        Program(
            "infogan",
            "gan_infogan/infogan.py",
            (
                "--n_epochs",
                "1",
                "--batch_size",
                "4",
                "--latent_dim",
                "8",
                "--img_size",
                "16",
                "--sample_interval",
                "1000",
            ),
            env=GAN_DATA,
            source="eriklindernoren/PyTorch-GAN infogan @ 36d3c77",
        ),
        Program(
            "aae",
            "gan_aae/aae.py",
            (
                "--n_epochs",
                "1",
                "--batch_size",
                "4",
                "--latent_dim",
                "4",
                "--img_size",
                "8",
                "--sample_interval",
                "1000",
            ),
            env=GAN_DATA,
            source="eriklindernoren/PyTorch-GAN aae @ 36d3c77",
        ),
        Program(
            "neural_style",
            "tutorial_neural_style/neural_style_tutorial.py",
            ("--num_steps", "4"),
            data=(data.style_images,),
            source="pytorch/tutorials advanced_source/neural_style_tutorial.py @ 0a7e686",
        ),
        Program(
            "fgsm",
            "tutorial_fgsm/fgsm_tutorial.py",
            ("--epsilons", "0", "0.1", "0.3"),
            data=(data.lenet_weights,),
            env={"STANDIN_TEST": "6"},
            source="pytorch/tutorials beginner_source/fgsm_tutorial.py @ 03cd491",
        ),
    )
}

EVAL_BATCHES = ("--epochs", "1", "--batch-size", "8", "--test-batch-size", "1", "--log-interval", "1", "--no-accel")
WLM_LONG_LOG = tuple("200" if a == "1" and i and WLM[i - 1] == "--log-interval" else a for i, a in enumerate(WLM))

BUGS: list[Bug] = [
    # -- gradients accumulated across steps (unit 02) ---------------------------------------------------
    Bug(
        "mnist_no_zero_grad",
        "mnist",
        "main.py",
        "        optimizer.zero_grad()\n        output = model(data)\n",
        "        output = model(data)\n",
        "accumulated-grad",
        "IBM/aihwkit#446: the examples never call zero_grad; the loss falls, then climbs again",
        edit=("loss.backward()",),
    ),
    Bug(
        "nanogpt_no_zero_grad",
        "nanogpt",
        "train.py",
        "    optimizer.zero_grad(set_to_none=True)\n",
        "",
        "accumulated-grad",
        "pytorch/pytorch#47175: zero_grad forgotten (or once per epoch); accumulation on purpose clears after each step",
        edit=("scaler.scale(loss).backward()",),
    ),
    Bug(
        "mingpt_trainer_no_zero_grad",
        "mingpt_adder",
        "mingpt/trainer.py",
        "            model.zero_grad(set_to_none=True)\n",
        "",
        "accumulated-grad",
        "yueliu1999/HSAN#6: optimizer.zero_grad() is never called and the model does not converge",
        edit=("self.loss.backward()",),
    ),
    Bug(
        "infogan_info_step_without_zero_grad",
        "infogan",
        "infogan.py",
        "        optimizer_info.zero_grad()\n",
        "",
        "accumulated-grad",
        "meta-pytorch/torchforge#71: one optimizer's gradients were not zeroed after each step",
        edit=("info_loss.backward()",),
    ),
    # -- graphs carried or kept (units 06, 08) -------------------------------------------------------------
    Bug(
        "dcgan_fake_not_detached",
        "dcgan",
        "main.py",
        "        output = netD(fake.detach())\n",
        "        output = netD(fake)\n",
        "freed-graph",
        "pytorch/examples#116: without detach, 'Trying to backward through the graph a second time' at errG.backward()",
    ),
    Bug(
        "aae_code_not_detached",
        "aae",
        "aae.py",
        "discriminator(encoded_imgs.detach())",
        "discriminator(encoded_imgs)",
        "freed-graph",
        "eriklindernoren/PyTorch-GAN#151: why detach the generated batch when the discriminator learns",
    ),
    Bug(
        "word_lm_hidden_not_repackaged",
        "word_lm_lstm",
        "main.py",
        "            hidden = repackage_hidden(hidden)\n            output, hidden = model(data, hidden)\n",
        "            output, hidden = model(data, hidden)\n",
        "carried-state",
        "yunjey/pytorch-tutorial#90: the language model's states are not detached between batches",
    ),
    Bug(
        "word_lm_total_loss_tensor",
        "word_lm_lstm",
        "main.py",
        "        total_loss += loss.item()\n",
        "        total_loss += loss\n",
        "carried-state",
        "google/brax#152: the total loss is kept as a tensor, and memory grows every step",
        args=(*WLM_LONG_LOG, "--model", "LSTM"),
    ),
    Bug(
        "reinforce_log_probs_not_cleared",
        "reinforce",
        "reinforce.py",
        "    del policy.saved_log_probs[:]\n",
        "",
        "carried-state",
        "pytorch/examples#151: finish_episode over kept experiences: 'backward through the graph second time'",
        edit=("del policy.rewards[:]",),
    ),
    Bug(
        "mnist_test_without_no_grad",
        "mnist",
        "main.py",
        """    with torch.no_grad():
        for data, target in test_loader:
            data, target = data.to(device), target.to(device)
            output = model(data)
            test_loss += F.nll_loss(output, target, reduction="sum").item()
            pred = output.argmax(dim=1, keepdim=True)
            correct += pred.eq(target.view_as(pred)).sum().item()
""",
        """    for data, target in test_loader:
        data, target = data.to(device), target.to(device)
        output = model(data)
        test_loss += F.nll_loss(output, target, reduction="sum")
        pred = output.argmax(dim=1, keepdim=True)
        correct += pred.eq(target.view_as(pred)).sum().item()
""",
        "held-graph",
        "leftthomas/SRGAN#43: GPU memory explodes during validation; fixed by torch.no_grad() around the loop",
        edit=('test_loss += F.nll_loss(output, target, reduction="sum")', "for data, target in test_loader:"),
        args=EVAL_BATCHES,
        env={"STANDIN_TEST": "40"},
    ),
    # -- an optimizer step between a forward and its backward (unit 12) -----------------------------------
    Bug(
        "dcgan_reuse_discriminator_output",
        "dcgan",
        "main.py",
        """        output = netD(fake.detach())
        errD_fake = criterion(output, label)
        errD_fake.backward()
        D_G_z1 = output.mean().item()
        errD = errD_real + errD_fake
        optimizerD.step()

        # (2) G: maximize log(D(G(z)))
        netG.zero_grad()
        label.fill_(real_label)
        output = netD(fake)
""",
        """        output = netD(fake)
        errD_fake = criterion(output, label)
        errD_fake.backward(retain_graph=True)
        D_G_z1 = output.mean().item()
        errD = errD_real + errD_fake
        optimizerD.step()

        # (2) G: maximize log(D(G(z))), reusing D's output on the fake batch
        netG.zero_grad()
        label.fill_(real_label)
""",
        "optimizer-mismatch",
        "pytorch/examples#584 and pytorch/pytorch#39141: reuse D's output for errG; with retain_graph=True the "
        "backward then finds D's weights modified by an inplace operation",
        edit=("optimizerD.step()",),
    ),
    Bug(
        "dcgan_optimizer_g_on_netd",
        "dcgan",
        "main.py",
        "optimizerG = optim.Adam(netG.parameters(),",
        "optimizerG = optim.Adam(netD.parameters(),",
        "optimizer-mismatch",
        "pytorch/pytorch#14467: the optimizer was built on the wrong network, and the generator never moves",
    ),
    Bug(
        "nanogpt_decay_group_misses_matrices",
        "nanogpt",
        "model.py",
        "if p.dim() >= 2]",
        "if p.dim() > 2]",
        "optimizer-mismatch",
        "huggingface/accelerate#1299-style parameter groups: the weight-decay split leaves the matrices in no group",
    ),
    # -- a Parameter's name bound to another tensor (unit 04b) ---------------------------------------------
    Bug(
        "mnist_fc2_reinitialised_after_optimizer",
        "mnist",
        "main.py",
        "    scheduler = StepLR(",
        "    model.fc2.weight = nn.Parameter(model.fc2.weight * 0.1)\n    scheduler = StepLR(",
        "parameter-rebound",
        "openvinotoolkit/nncf#327 and marlbenchmark/on-policy#19: a new nn.Parameter after the optimizer was built",
    ),
    Bug(
        "word_lm_bias_initialised_by_assignment",
        "word_lm_lstm",
        "model.py",
        "        nn.init.uniform_(self.encoder.weight, -initrange, initrange)\n        nn.init.zeros_(self.decoder.bias)\n",
        "        nn.init.uniform_(self.encoder.weight, -initrange, initrange)\n        self.decoder.bias = torch.zeros(self.ntoken)\n",
        "parameter-rebound",
        "pytorch/pytorch#44022: TypeError: cannot assign 'torch.FloatTensor' as parameter",
        edit=("self.decoder.bias = torch.zeros(self.ntoken)",),
    ),
    # -- modules not registered (unit 12) ------------------------------------------------------------------
    Bug(
        "nanogpt_blocks_in_a_list",
        "nanogpt",
        "model.py",
        "self.blocks = nn.ModuleList([Block(config) for _ in range(config.n_layer)])",
        "self.blocks = [Block(config) for _ in range(config.n_layer)]",
        "unregistered-module",
        "pytorch/pytorch#666: layers kept in a Python list are missing from model.parameters()",
    ),
    # -- where the path stops (unit 04) ----------------------------------------------------------------------
    Bug(
        "neural_style_targets_in_inference_mode",
        "neural_style",
        "neural_style_tutorial.py",
        "            content_loss = ContentLoss(model(content_img).detach())\n",
        "            with torch.inference_mode():\n                target = model(content_img)\n"
        "            content_loss = ContentLoss(target)\n",
        "no-grad-root",
        "facebookresearch/dinov2#472: tensors made under inference_mode cannot be saved for backward",
    ),
    Bug(
        "reinforce_log_prob_detached",
        "reinforce",
        "reinforce.py",
        "        policy_loss.append(-log_prob * R)\n",
        "        policy_loss.append(-log_prob.detach() * R)\n",
        "no-grad-root",
        "Quantum-Cheese/DeepReinforcementLearning_Pytorch#1: the log-probabilities lose their gradient",
    ),
    Bug(
        "vae_kl_term_as_number",
        "vae",
        "main.py",
        "    KLD = -0.5 * torch.sum(1 + logvar - mu.pow(2) - logvar.exp())\n",
        "    KLD = -0.5 * torch.sum(1 + logvar - mu.pow(2) - logvar.exp()).item()\n",
        "inert-loss-term",
        "isayev/ReLeaSE#39: a term computed with .item() changes the loss and trains nothing",
    ),
    Bug(
        "actor_critic_value_detached",
        "actor_critic",
        "actor_critic.py",
        "        value_losses.append(F.smooth_l1_loss(value, torch.tensor([R])))\n",
        "        value_losses.append(F.smooth_l1_loss(value.detach(), torch.tensor([R])))\n",
        "inert-loss-term",
        "Quantum-Cheese/DeepReinforcementLearning_Pytorch#1: a detached term leaves the critic untrained",
    ),
    Bug(
        "wgan_gp_penalty_without_create_graph",
        "wgan_gp",
        "wgan_gp.py",
        "        create_graph=True,\n",
        "        create_graph=False,\n",
        "inert-loss-term",
        "KupynOrest/DeblurGAN#56: the gradient penalty's graph; without create_graph the penalty trains nothing",
    ),
    # -- in-place writes on saved tensors (unit 07) ---------------------------------------------------------
    Bug(
        "mnist_rnn_relu_in_place_on_lstm_output",
        "mnist_rnn",
        "main.py",
        "        output = output[:, -1, :]  # the last step's output\n",
        "        output = F.relu(output[:, -1, :], inplace=True)  # the last step's output\n",
        "inplace-on-saved",
        "JDAI-CV/LIO#9: an in-place ReLU on a tensor another node saved",
    ),
    Bug(
        "neural_style_relu_kept_in_place",
        "neural_style",
        "neural_style_tutorial.py",
        "            layer = nn.ReLU(inplace=False)  # an in-place ReLU would overwrite what the losses saved\n",
        "            pass  # the network's own ReLU, in place\n",
        "inplace-on-saved",
        "the style-transfer tutorial's own warning: the in-place ReLU overwrites what the content loss saved",
    ),
]

# -- planter47: programs and bugs chosen and planted by someone who had not read the doctor's code (issue 47,
# item 5): pytorch/tutorials and a functorch example; five correct uses of advanced autograd among them -----
PLANTER47: dict[str, Program] = {
    p.name: p
    for p in (
        Program(
            "transfer_learning",
            "tutorial_transfer_learning/transfer_learning_tutorial.py",
            ("--num_epochs", "2", "--batch_size", "4", "--image_size", "16", "--workers", "0"),
            data=(data.hymenoptera_images,),
            source="pytorch/tutorials beginner_source/transfer_learning_tutorial.py @ 039ee0e",
        ),
        Program(
            "dqn",
            "tutorial_dqn/reinforcement_q_learning.py",
            ("--num_episodes", "4", "--batch_size", "8"),
            source="pytorch/tutorials intermediate_source/reinforcement_q_learning.py @ c53e7d4",
        ),
        Program(
            "per_sample_grads",
            "tutorial_per_sample_grads/per_sample_grads.py",
            ("--batch_size", "4", "--repeat", "1"),
            source="pytorch/tutorials intermediate_source/per_sample_grads.py @ 0bb46a4",
        ),
        Program(
            "polynomial_function",
            "tutorial_polynomial_function/polynomial_custom_function.py",
            ("--steps", "20", "--points", "200"),
            source="pytorch/tutorials beginner_source/examples_autograd/polynomial_custom_function.py @ c53e7d4",
        ),
        Program(
            "fused_conv_bn",
            "tutorial_fused_conv_bn/custom_function_conv_bn_tutorial.py",
            ("--epochs", "1", "--batch_size", "4", "--check_batch", "1"),
            env=MNIST,
            source="pytorch/tutorials intermediate_source/custom_function_conv_bn_tutorial.py @ 00e250b",
        ),
        Program(
            "maml_sine",
            "functorch_maml/maml_sine.py",
            (
                "--iterations",
                "4",
            ),
            source="pytorch/pytorch functorch/examples/maml_regression/evjang.py @ 0d9e42a",
        ),
        Program(
            "visualizing_gradients",
            "tutorial_visualizing_gradients/visualizing_gradients_tutorial.py",
            (
                "--epochs",
                "3",
            ),
            source="pytorch/tutorials intermediate_source/visualizing_gradients_tutorial.py @ 4577e7a",
        ),
    )
}
PROGRAMS.update(PLANTER47)

PLANTER47_BUGS: list[Bug] = [
    # -- the transfer-learning tutorial ---------------------------------------------------------------------
    Bug(
        "transfer_new_head_after_optimizer",
        "transfer_learning",
        "transfer_learning_tutorial.py",
        """model_ft.fc = nn.Linear(num_ftrs, len(class_names))

model_ft = model_ft.to(device)
criterion = nn.CrossEntropyLoss()
params = [
    {"params": [p for name, p in model_ft.named_parameters() if "fc" in name], "lr": 1e-2},
    {"params": [p for name, p in model_ft.named_parameters() if "fc" not in name], "lr": 1e-3},
]
optimizer_ft = optim.SGD(params, momentum=0.9)
""",
        """model_ft = model_ft.to(device)
criterion = nn.CrossEntropyLoss()
params = [
    {"params": [p for name, p in model_ft.named_parameters() if "fc" in name], "lr": 1e-2},
    {"params": [p for name, p in model_ft.named_parameters() if "fc" not in name], "lr": 1e-3},
]
optimizer_ft = optim.SGD(params, momentum=0.9)
model_ft.fc = nn.Linear(num_ftrs, len(class_names))  # the head for our classes
""",
        "optimizer-mismatch",
        "pytorch/pytorch#54765 and microsoft/nni#4521: layers replaced after the optimizer was built are not updated",
        edit=("model_ft.fc = nn.Linear(num_ftrs, len(class_names))  # the head for our classes",),
    ),
    Bug(
        "transfer_freeze_by_module_attribute",
        "transfer_learning",
        "transfer_learning_tutorial.py",
        "for param in model_conv.parameters():\n    param.requires_grad = False\n",
        "model_conv.requires_grad = False  # freeze the pretrained network\n",
        "unregistered-module",
        "catalyst-team/catalyst#81: freezing set an attribute on the module; the parameters still required grad",
    ),
    Bug(
        "transfer_freeze_after_new_head",
        "transfer_learning",
        "transfer_learning_tutorial.py",
        """for param in model_conv.parameters():
    param.requires_grad = False

num_ftrs = model_conv.fc.in_features
model_conv.fc = nn.Linear(num_ftrs, len(class_names))
""",
        """num_ftrs = model_conv.fc.in_features
model_conv.fc = nn.Linear(num_ftrs, len(class_names))
for param in model_conv.parameters():
    param.requires_grad = False
""",
        "no-grad-root",
        "megvii-model/DetNAS#34: every parameter set to requires_grad=False; loss.backward() raises 'element 0 of "
        "tensors does not require grad'",
        edit=("for param in model_conv.parameters():", "model_conv.fc = nn.Linear(num_ftrs, len(class_names))"),
    ),
    Bug(
        "transfer_running_loss_tensor",
        "transfer_learning",
        "transfer_learning_tutorial.py",
        "                running_loss += loss.item() * inputs.size(0)\n",
        "                running_loss += loss * inputs.size(0)\n",
        "carried-state",
        "google/brax#152: the running loss is kept as a tensor and memory grows with every batch",
        args=("--num_epochs", "2", "--batch_size", "2", "--image_size", "16", "--workers", "0"),
    ),
    # -- the DQN tutorial -------------------------------------------------------------------------------------
    Bug(
        "dqn_target_without_no_grad",
        "dqn",
        "reinforcement_q_learning.py",
        """    with torch.no_grad():
        next_state_values[non_final_mask] = target_net(non_final_next_states).max(1).values
""",
        "    next_state_values[non_final_mask] = target_net(non_final_next_states).max(1).values\n",
        "optimizer-mismatch",
        "philtabor/Deep-Q-Learning-Paper-To-Code#9 and #16, ray-project/ray#35259: the TD target is computed "
        "with the target network's graph (gradients flow into target_net, which no optimizer holds)",
    ),
    Bug(
        "dqn_no_zero_grad",
        "dqn",
        "reinforcement_q_learning.py",
        "    optimizer.zero_grad()\n    loss.backward()\n",
        "    loss.backward()\n",
        "accumulated-grad",
        "udacity/deep-learning-v2-pytorch#160: zero_grad missing, gradients accumulate across steps",
    ),
    # -- the custom-Function tutorials ------------------------------------------------------------------------
    Bug(
        "polynomial_grads_never_cleared",
        "polynomial_function",
        "polynomial_custom_function.py",
        """
        a.grad = None
        b.grad = None
        c.grad = None
        d.grad = None
""",
        "",
        "accumulated-grad",
        "pytorch/tutorials#3397: a proposal to delete the tutorial's 'a.grad = None' lines (the gradients then add "
        "up across steps)",
        edit=("loss.backward()",),
    ),
    Bug(
        "fused_conv_bn_test_keeps_graphs",
        "fused_conv_bn",
        "custom_function_conv_bn_tutorial.py",
        """    with torch.inference_mode():  # in place of no_grad, for a faster test
        for data, target in test_loader:
            data, target = data.to(device), target.to(device)
            output = model(data)
            test_loss += F.nll_loss(output, target, reduction="sum").item()
            pred = output.argmax(dim=1, keepdim=True)
            correct += pred.eq(target.view_as(pred)).sum().item()
""",
        """    for data, target in test_loader:
        data, target = data.to(device), target.to(device)
        output = model(data)
        test_loss += F.nll_loss(output, target, reduction="sum")
        pred = output.argmax(dim=1, keepdim=True)
        correct += pred.eq(target.view_as(pred)).sum().item()
""",
        "held-graph",
        "leftthomas/SRGAN#43: memory explodes during validation; fixed by no_grad around the loop",
        edit=('test_loss += F.nll_loss(output, target, reduction="sum")', "for data, target in test_loader:"),
        args=("--epochs", "1", "--batch_size", "4", "--check_batch", "1"),
        env={"STANDIN_TRAIN": "4", "STANDIN_TEST": "200"},
    ),
    # -- MAML -------------------------------------------------------------------------------------------------
    Bug(
        "maml_adapted_params_detached",
        "maml_sine",
        "maml_sine.py",
        "    new_params = [(params[i] - alpha * grads[i]) for i in range(len(params))]\n",
        "    new_params = [(params[i] - alpha * grads[i]).detach() for i in range(len(params))]\n",
        "no-grad-root",
        "KanishJebaMathewM/Truxify#13118: the inner update detaches the graph, and the meta-model never trains",
    ),
    # -- the gradient-visualization tutorial ------------------------------------------------------------------
    Bug(
        "visualizing_output_grad_in_forward_hook",
        "visualizing_gradients",
        "visualizing_gradients_tutorial.py",
        "        output.register_hook(hook_backward(module_name, grads))\n",
        "        grads.append((module_name, output.grad))\n",
        "nonleaf-grad",
        "shelfwise/receptivefield#14 and pytorch/pytorch#2384: an intermediate output's .grad is None",
    ),
    Bug(
        "visualizing_second_optimizer_on_first_model",
        "visualizing_gradients",
        "visualizing_gradients_tutorial.py",
        "optimizer_nobn = optim.SGD(model_nobn.parameters(), lr=0.01, momentum=0.9)\n",
        "optimizer_nobn = optim.SGD(model_bn.parameters(), lr=0.01, momentum=0.9)\n",
        "optimizer-mismatch",
        "pytorch/pytorch#14467: an optimizer built on the wrong network (copied line), the other never moves",
    ),
]
assert PLANTER47_BUGS[7].name == "fused_conv_bn_test_keeps_graphs"
PLANTER47_BUGS += [
    Bug(  # the same bug with four batches an epoch (the program's own corpus size)
        "transfer_running_loss_tensor_four_batches",
        "transfer_learning",
        "transfer_learning_tutorial.py",
        "                running_loss += loss.item() * inputs.size(0)\n",
        "                running_loss += loss * inputs.size(0)\n",
        "carried-state",
        "google/brax#152: the running loss is kept as a tensor and memory grows with every batch",
    ),
    Bug(  # the same bug with 25 test batches
        "fused_conv_bn_test_keeps_graphs_25_batches",
        "fused_conv_bn",
        "custom_function_conv_bn_tutorial.py",
        PLANTER47_BUGS[7].old,
        PLANTER47_BUGS[7].new,
        "held-graph",
        "leftthomas/SRGAN#43: memory explodes during validation; fixed by no_grad around the loop",
        edit=PLANTER47_BUGS[7].edit,
        args=("--epochs", "1", "--batch_size", "4", "--check_batch", "1"),
        env={"STANDIN_TRAIN": "4", "STANDIN_TEST": "100"},
    ),
]
BUGS += PLANTER47_BUGS

# What the doctor gets wrong today among the above (a false alarm, a bug not named): the tests expect it to
# fail (xfail, strict), so that a change that fixes one is seen (docs/doctor.md's claims are the reference).
KNOWN: dict[str, str] = {}  # planter47's four (a false alarm on MAML, three misses) are fixed: none today
