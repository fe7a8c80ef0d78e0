"""A Hugging Face Trainer run the way run_glue does it: trainer.train() with no evaluation
during training, then trainer.evaluate() once at the end. A tiny BERT built from a config."""

import json
import tempfile
import time

import torch
from transformers import BertConfig, BertForSequenceClassification, Trainer, TrainerCallback, TrainingArguments

clock = {"training": False, "wait": 0.0, "loop": 0.0, "mark": 0.0, "steps": [], "epoch_start_step": 0,
         "validations": []}


class Reviews(torch.utils.data.Dataset):
    def __init__(self, n, seed):
        g = torch.Generator().manual_seed(seed)
        self.ids = torch.randint(5, 200, (n, 24), generator=g)
        self.labels = (self.ids[:, :4].float().mean(1) > 100).long()

    def __len__(self):
        return len(self.ids)

    def __getitem__(self, i):
        start = time.perf_counter()
        item = {"input_ids": self.ids[i], "attention_mask": torch.ones(24, dtype=torch.long),
                "labels": self.labels[i]}
        if clock["training"]:
            clock["wait"] += time.perf_counter() - start
        return item


def collate(items):
    start = time.perf_counter()
    batch = {key: torch.stack([item[key] for item in items]) for key in items[0]}
    if clock["training"]:
        clock["wait"] += time.perf_counter() - start
    return batch


class Clock(TrainerCallback):
    """The loop's own time: from the start of an epoch, step end to step end."""

    def on_train_begin(self, args, state, control, **kwargs):
        clock["training"] = True

    def on_epoch_begin(self, args, state, control, **kwargs):
        clock["mark"] = time.perf_counter()
        clock["epoch_start_step"] = state.global_step

    def on_step_end(self, args, state, control, **kwargs):
        now = time.perf_counter()
        clock["loop"] += now - clock["mark"]
        clock["mark"] = now

    def on_epoch_end(self, args, state, control, **kwargs):
        clock["steps"].append(state.global_step - clock["epoch_start_step"])
        clock["validations"].append(0)

    def on_train_end(self, args, state, control, **kwargs):
        clock["training"] = False

    def on_evaluate(self, args, state, control, **kwargs):
        clock["validations"][-1] += 1


def main():
    torch.manual_seed(0)
    config = BertConfig(vocab_size=200, hidden_size=32, num_hidden_layers=2, num_attention_heads=2,
                        intermediate_size=64, max_position_embeddings=32, num_labels=2)
    model = BertForSequenceClassification(config)
    with tempfile.TemporaryDirectory() as output_dir:
        args = TrainingArguments(output_dir=output_dir, num_train_epochs=2, per_device_train_batch_size=16,
                                 per_device_eval_batch_size=32, learning_rate=5e-4, eval_strategy="no",
                                 save_strategy="no", logging_steps=8, report_to=[], use_cpu=True,
                                 dataloader_num_workers=0, disable_tqdm=True)
        trainer = Trainer(model=model, args=args, train_dataset=Reviews(512, 0), eval_dataset=Reviews(64, 1),
                          data_collator=collate, callbacks=[Clock()])
        trainer.train()
        metrics = trainer.evaluate()
        print(f"eval loss {metrics['eval_loss']:.4f}", flush=True)

    truth = {"unit": "epoch", "units": len(clock["steps"]), "steps": clock["steps"],
             "validations": clock["validations"], "wait_share": round(clock["wait"] / clock["loop"], 3)}
    print("DEVICEWATCH-TRUTH " + json.dumps(truth), flush=True)


if __name__ == "__main__":
    main()
