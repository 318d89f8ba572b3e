"""The Gradio playground's support: input limits, presets, the model store, the live race,
HTML lanes, plotly charts and ZeroGPU. No Gradio import here; app.py wires it."""
