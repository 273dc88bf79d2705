"""Print random Q, K, V as the JSON that `attn compute` reads (standard library only):

    python docs/make_qkv.py | attn compute -v cosine -f json | jq '.heads[0].weights'
    python docs/make_qkv.py --m 2 --n 5 --d 4 --dv 3 --seed 7 > qkv.json && attn compute --input qkv.json

Queries [m, d], keys [n, d] and values [n, dv], entries drawn from N(0, 1) and rounded
to 3 decimals so that they are easy to read; the same seed prints the same bytes.
"""

import argparse
import json
import random


def matrix(rng: random.Random, rows: int, cols: int) -> list[list[float]]:
    return [[round(rng.gauss(0.0, 1.0), 3) for _ in range(cols)] for _ in range(rows)]


def main() -> None:
    parser = argparse.ArgumentParser(description="Print random Q, K, V as JSON for attn compute.")
    parser.add_argument("--m", type=int, default=3, help="number of queries (default 3)")
    parser.add_argument("--n", type=int, default=4, help="number of keys and values (default 4)")
    parser.add_argument("--d", type=int, default=4, help="width of queries and keys (default 4)")
    parser.add_argument("--dv", type=int, default=2, help="width of values (default 2)")
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args()
    rng = random.Random(args.seed)
    doc = {"q": matrix(rng, args.m, args.d), "k": matrix(rng, args.n, args.d), "v": matrix(rng, args.n, args.dv)}
    print(json.dumps(doc))


if __name__ == "__main__":
    main()
