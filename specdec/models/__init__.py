"""Getting models: by Hub id, local folder, GGUF file or offline PyPI name, optionally quantized."""
