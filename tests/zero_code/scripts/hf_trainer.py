"""A tiny BERT classifier built from a config (nothing downloaded), fitted by a Hugging Face
Trainer for two epochs with an evaluation after each."""

import sys

import torch
from transformers import BertConfig, BertForSequenceClassification, Trainer, TrainingArguments


class Tokens(torch.utils.data.Dataset):
    def __init__(self, count, seed):
        g = torch.Generator().manual_seed(seed)
        self.ids = torch.randint(1, 64, (count, 16), generator=g)
        self.labels = (self.ids[:, 0] > 32).long()

    def __len__(self):
        return len(self.ids)

    def __getitem__(self, i):
        return {"input_ids": self.ids[i], "attention_mask": torch.ones(16, dtype=torch.long), "labels": self.labels[i]}


torch.manual_seed(0)
config = BertConfig(vocab_size=64, hidden_size=16, num_hidden_layers=1, num_attention_heads=2,
                    intermediate_size=32, max_position_embeddings=32, num_labels=2)
args = TrainingArguments(output_dir=sys.argv[1], num_train_epochs=2, per_device_train_batch_size=8,
                         per_device_eval_batch_size=8, eval_strategy="epoch", logging_strategy="epoch",
                         save_strategy="no", report_to=[], use_cpu=True, seed=0)
trainer = Trainer(model=BertForSequenceClassification(config), args=args,
                  train_dataset=Tokens(128, 1), eval_dataset=Tokens(32, 2))
trainer.train()
