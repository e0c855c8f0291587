"""Classifies scikit-learn's held-out digits with the bundled digits_cnn
program and prints accuracy and throughput. Needs only pterun and NumPy.

    python3 examples/digits.py [--program tests/fixtures/digits_cnn.pte]
"""

import argparse
import pathlib
import time

import numpy as np

import pterun

ROOT = pathlib.Path(__file__).resolve().parents[1]


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--program", default=ROOT / "tests" / "fixtures" / "digits_cnn.pte")
    parser.add_argument("--data", default=ROOT / "tests" / "fixtures" / "digits_cnn_heldout.npz")
    parser.add_argument("--repeat", type=int, default=50, help="timed runs of the whole set")
    args = parser.parse_args()

    held_out = np.load(args.data)
    images, labels = held_out["images"], held_out["labels"]
    method = pterun.load_program(args.program).load_method("forward")

    logits = method([images])[0].numpy()
    accuracy = float((logits.argmax(axis=1) == labels).mean())

    times = []
    for _ in range(args.repeat):
        start = time.perf_counter()
        method([images])
        times.append(time.perf_counter() - start)
    batch_s = float(np.median(times))
    one = images[:1]
    single = []
    for _ in range(args.repeat * 10):
        start = time.perf_counter()
        method([one])
        single.append(time.perf_counter() - start)
    single_us = float(np.median(single)) * 1e6

    print(f"program:    {args.program}")
    print(f"digits:     {len(labels)} held-out 8x8 images")
    print(f"accuracy:   {accuracy:.2%} ({int(round(accuracy * len(labels)))}/{len(labels)} correct)")
    print(f"throughput: {len(labels) / batch_s:,.0f} images/s (batch of {len(labels)}, "
          f"median of {args.repeat} runs, {pterun.get_num_threads()} threads)")
    print(f"latency:    {single_us:.1f} us per single-image call (median)")


if __name__ == "__main__":
    main()
