"""minGPT (after karpathy/minGPT, commit 37baab7, MIT; written again for the doctor's corpus)."""
