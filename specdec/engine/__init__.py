"""The algorithm: sampling, the accept rule, KV caches, drafters, the decoding loops and their
statistics. It imports torch and transformers, never gradio, plotly, the playground or the bench."""
