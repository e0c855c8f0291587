"""Classifies scikit-learn's held-out digits with digits_cnn on a local Ray
cluster (Ray Data, pterun.ray.predict) and prints the accuracy and rows/s.

    pip install 'pterun[ray]'
    python3 examples/ray_batch.py [--actors 2] [--batch-size ROWS] [--rows-per-call 256]

The 359 held-out images are repeated --copies times, so that there are
enough rows to keep the actors busy; the accuracy is the same on every copy.
Ray Data hands each actor batches of --batch-size rows (by default
predict()'s choice: about 16 MiB of the method's inputs and outputs), which
it runs in pterun calls of --rows-per-call rows: Ray spends a fixed time on
each of its batches, which large batches spread thin (docs/ray.md).
"""

import argparse
import os
import pathlib
import time

import numpy as np
import ray

import pterun
import pterun.ray

ROOT = pathlib.Path(__file__).resolve().parents[1]


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--program", default=ROOT / "tests" / "fixtures" / "digits_cnn.pte")
    parser.add_argument("--data", default=ROOT / "tests" / "fixtures" / "digits_cnn_heldout.npz")
    parser.add_argument("--actors", type=int, default=2, help="actors, one CPU each")
    parser.add_argument("--batch-size", type=int, default=None,
                        help="rows per Ray batch (default: predict()'s choice)")
    parser.add_argument("--rows-per-call", type=int, default=256, help="rows per pterun call")
    parser.add_argument("--copies", type=int, default=20)
    parser.add_argument("--cpus", type=int, default=os.cpu_count(), help="the local cluster's CPUs")
    args = parser.parse_args()

    held_out = np.load(args.data)
    images = np.concatenate([held_out["images"]] * args.copies)
    labels = np.concatenate([held_out["labels"]] * args.copies)

    os.environ.setdefault("RAY_USAGE_STATS_ENABLED", "0")
    ray.init(num_cpus=args.cpus, include_dashboard=False, log_to_driver=False)
    ray.data.DataContext.get_current().enable_progress_bars = False
    dataset = ray.data.from_items([{"image": x, "label": y} for x, y in zip(images, labels)])

    start = time.perf_counter()
    predictions = pterun.ray.predict(
        dataset, str(args.program), input_columns=["image"], output_columns=["logits"],
        keep_columns=["label"], batch_size=args.batch_size, rows_per_call=args.rows_per_call,
        concurrency=args.actors, num_cpus=1).materialize()
    elapsed = time.perf_counter() - start

    correct = rows = 0
    for batch in predictions.iter_batches(batch_format="numpy", batch_size=4096):
        correct += int((batch["logits"].argmax(axis=1) == batch["label"]).sum())
        rows += len(batch["label"])
    ray.shutdown()

    print(f"program:    {args.program}")
    print(f"rows:       {rows} ({args.copies} copies of {len(held_out['labels'])} held-out "
          "8x8 images)")
    print(f"accuracy:   {correct / rows:.2%} ({correct}/{rows} correct)")
    batches = "predict()'s default" if args.batch_size is None else args.batch_size
    print(f"throughput: {rows / elapsed:,.0f} rows/s on {args.actors} actors, Ray batches of "
          f"{batches} rows, pterun calls of {args.rows_per_call} ({elapsed:.2f} s, "
          "actor start-up and program loading included)")


if __name__ == "__main__":
    main()
