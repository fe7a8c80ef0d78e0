"""Fine-tune a tiny BERT classifier with the Hugging Face Trainer (evaluated every epoch).

Synthetic task: a sequence is class 1 when most of its tokens come from the upper half of the
vocabulary, class 0 when they come from the lower half (with a few tokens of noise).
"""

import argparse

import transformers
from transformers import BertConfig, BertForSequenceClassification, Trainer, TrainingArguments, set_seed

import numpy as np
import torch
from torch.utils.data import Dataset

VOCAB = 100
SEQ_LEN = 16


class TokenDataset(Dataset):
    def __init__(self, n, seed):
        rng = np.random.default_rng(seed)
        self.labels = rng.integers(0, 2, size=n)
        ids = np.where(self.labels[:, None] == 1,
                       rng.integers(52, VOCAB, size=(n, SEQ_LEN)),
                       rng.integers(2, 50, size=(n, SEQ_LEN)))
        noise = rng.random((n, SEQ_LEN)) < 0.2
        ids[noise] = rng.integers(2, VOCAB, size=noise.sum())
        ids[:, 0] = 1  # [CLS]
        self.input_ids = ids

    def __len__(self):
        return len(self.labels)

    def __getitem__(self, i):
        return {
            "input_ids": torch.tensor(self.input_ids[i], dtype=torch.long),
            "attention_mask": torch.ones(SEQ_LEN, dtype=torch.long),
            "labels": torch.tensor(int(self.labels[i])),
        }


def compute_metrics(eval_pred):
    logits, labels = eval_pred
    return {"accuracy": float((np.argmax(logits, axis=-1) == labels).mean())}


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--epochs", type=int, default=3)
    parser.add_argument("--output-dir", default="hf_trainer_out")
    args = parser.parse_args()

    set_seed(42)
    config = BertConfig(vocab_size=VOCAB, hidden_size=32, num_hidden_layers=2, num_attention_heads=2,
                        intermediate_size=64, max_position_embeddings=SEQ_LEN, num_labels=2)
    model = BertForSequenceClassification(config)

    train_dataset = TokenDataset(384, seed=0)   # 384 / 16 = 24 optimizer steps an epoch
    eval_dataset = TokenDataset(64, seed=1)

    training_args = TrainingArguments(
        output_dir=args.output_dir,
        num_train_epochs=args.epochs,
        per_device_train_batch_size=16,
        per_device_eval_batch_size=32,
        learning_rate=2e-3,
        eval_strategy="epoch",
        save_strategy="no",
        logging_strategy="epoch",
        report_to="none",
        seed=42,
        use_cpu=True,
    )
    trainer = Trainer(model=model, args=training_args, train_dataset=train_dataset,
                      eval_dataset=eval_dataset, compute_metrics=compute_metrics)
    result = trainer.train()
    print(result)


if __name__ == "__main__":
    main()
