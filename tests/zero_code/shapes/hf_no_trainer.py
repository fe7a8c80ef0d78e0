"""Train a tiny BERT classifier without the Trainer, in the style of Hugging Face's
``run_glue_no_trainer.py``: AdamW, a linear schedule, a DataLoader and a plain loop that
evaluates after every epoch.

Synthetic task: class 1 sequences draw most tokens from the upper half of the vocabulary.
"""

import argparse
import math

import transformers
from transformers import AutoConfig, AutoModelForSequenceClassification, default_data_collator, get_scheduler, set_seed

import numpy as np
import torch
from torch.utils.data import DataLoader

VOCAB = 100
SEQ_LEN = 16


def make_examples(n, seed):
    rng = np.random.default_rng(seed)
    labels = rng.integers(0, 2, size=n)
    ids = np.where(labels[:, None] == 1, rng.integers(52, VOCAB, size=(n, SEQ_LEN)),
                   rng.integers(2, 50, size=(n, SEQ_LEN)))
    noise = rng.random((n, SEQ_LEN)) < 0.2
    ids[noise] = rng.integers(2, VOCAB, size=noise.sum())
    ids[:, 0] = 1
    return [{"input_ids": ids[i].tolist(), "attention_mask": [1] * SEQ_LEN, "labels": int(labels[i])}
            for i in range(n)]


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--num_train_epochs", type=int, default=3)
    parser.add_argument("--per_device_train_batch_size", type=int, default=16)
    parser.add_argument("--per_device_eval_batch_size", type=int, default=32)
    parser.add_argument("--learning_rate", type=float, default=2e-3)
    parser.add_argument("--gradient_accumulation_steps", type=int, default=1)
    args = parser.parse_args()

    set_seed(0)
    config = AutoConfig.for_model("bert", vocab_size=VOCAB, hidden_size=32, num_hidden_layers=2,
                                  num_attention_heads=2, intermediate_size=64,
                                  max_position_embeddings=SEQ_LEN, num_labels=2)
    model = AutoModelForSequenceClassification.from_config(config)

    train_dataset = make_examples(320, seed=0)   # 320 / 16 = 20 batches an epoch
    eval_dataset = make_examples(96, seed=1)
    train_dataloader = DataLoader(train_dataset, shuffle=True, collate_fn=default_data_collator,
                                  batch_size=args.per_device_train_batch_size)
    eval_dataloader = DataLoader(eval_dataset, collate_fn=default_data_collator,
                                 batch_size=args.per_device_eval_batch_size)

    no_decay = ["bias", "LayerNorm.weight"]
    optimizer_grouped_parameters = [
        {"params": [p for n, p in model.named_parameters() if not any(nd in n for nd in no_decay)],
         "weight_decay": 0.01},
        {"params": [p for n, p in model.named_parameters() if any(nd in n for nd in no_decay)],
         "weight_decay": 0.0},
    ]
    optimizer = torch.optim.AdamW(optimizer_grouped_parameters, lr=args.learning_rate)

    num_update_steps_per_epoch = math.ceil(len(train_dataloader) / args.gradient_accumulation_steps)
    max_train_steps = args.num_train_epochs * num_update_steps_per_epoch
    lr_scheduler = get_scheduler(name="linear", optimizer=optimizer, num_warmup_steps=0,
                                 num_training_steps=max_train_steps)

    device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
    model.to(device)

    completed_steps = 0
    for epoch in range(args.num_train_epochs):
        model.train()
        total_loss = 0.0
        for step, batch in enumerate(train_dataloader):
            batch = {k: v.to(device) for k, v in batch.items()}
            outputs = model(**batch)
            loss = outputs.loss
            total_loss += loss.detach().float()
            loss = loss / args.gradient_accumulation_steps
            loss.backward()
            if step % args.gradient_accumulation_steps == 0 or step == len(train_dataloader) - 1:
                optimizer.step()
                lr_scheduler.step()
                optimizer.zero_grad()
                completed_steps += 1

        model.eval()
        correct = 0
        for step, batch in enumerate(eval_dataloader):
            batch = {k: v.to(device) for k, v in batch.items()}
            with torch.no_grad():
                outputs = model(**batch)
            predictions = outputs.logits.argmax(dim=-1)
            correct += (predictions == batch["labels"]).sum().item()
        accuracy = correct / len(eval_dataset)
        print(f"epoch {epoch}: train_loss {total_loss.item() / len(train_dataloader):.4f} "
              f"accuracy {accuracy:.4f} steps {completed_steps}")


if __name__ == "__main__":
    main()
