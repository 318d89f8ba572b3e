"""The playground's default prompt, chosen by measurement (#20): each candidate through the CLI
twice (SmolLM2-135M, prompt lookup, k = 4, greedy, 96 new tokens), its speedup, α and answer.
Run from the repo root on a quiet machine: python docs/default-prompt/candidates.py
(its output, 2026-11-24 on the 2-core AMD EPYC: docs/default-prompt/results.txt)."""
import json
import subprocess
import sys

CANDIDATES = {
    "merge (the previous default)": "Add type hints and a docstring to this function, and return the whole function:\n\n"
                                    "def merge(a, b):\n    out = []\n    while a and b:\n"
                                    "        out.append(a.pop(0) if a[0] < b[0] else b.pop(0))\n    return out + a + b\n",
    "typos": "Fix the spelling mistakes in this paragraph and return the corrected paragraph:\n\nThe quick brown fox "
             "jumpd over the lazy dog. It was a sunny day, and the fox was verry happy. The dog did not wake up, "
             "becuase it was sleeping deeply under the old oak tree.",
    "rename": "Rename the variable x to total in this Python code and return the whole code:\n\ndef add_all(items):\n"
              "    x = 0\n    for item in items:\n        x = x + item\n    return x\n",
    "yaml": "Convert this JSON to YAML:\n\n{\"name\": \"Alice\", \"age\": 30, \"city\": \"Paris\", \"languages\": "
            "[\"English\", \"French\"], \"active\": true}",
    "sort": "Sort these words alphabetically and list them one per line: banana, cherry, apple, mango, kiwi, grape, "
            "lemon, orange.",
    "comment": "Add a comment above each line of this function explaining what it does:\n\ndef add_all(items):\n"
               "    total = 0\n    for item in items:\n        total = total + item\n    return total\n",
    "numbered": "Rewrite this shopping list as a numbered list:\n- eggs\n- milk\n- bread\n- apples\n- cheese\n- rice",
    "docstring": "Add a docstring to this function and return the whole function:\n\ndef add_all(items):\n"
                 "    total = 0\n    for item in items:\n        total += item\n    return total\n",
    "story (the default)": "Repeat this paragraph, then add one sentence that continues the story:\n\nThe quick brown "
                           "fox jumped over the lazy dog. It was a sunny day, and the fox was very happy. The dog did "
                           "not wake up, because it was sleeping deeply under the old oak tree.",
}

for name, prompt in CANDIDATES.items():
    for run in range(2):
        out = subprocess.run([sys.executable, "-m", "specdec", "generate", "--target", "embedded", "--drafter",
                              "prompt-lookup", "--prompt", prompt, "--k", "4", "--max-new-tokens", "96", "--json"],
                             capture_output=True, text=True, check=True)
        result = json.loads(out.stdout)
        stats = result["stats"]
        print(f"{name}, run {run + 1}: speedup {stats['speedup']:.2f}x, α {stats['alpha'] or 0:.2f}, "
              f"identical {stats['identical']}")
    print(f"  answer: {result['standard']['text'][:300]!r}")
