"""Prompts in, text out: chat templating and incremental detokenisation."""
from __future__ import annotations


def check_text(name: str, text: str) -> None:
    """Text a tokenizer can read: Unicode that UTF-8 can encode. A lone surrogate (what Python makes of
    invalid UTF-8 bytes on a command line, or of a JSON "\\ud800") is not, and the tokenizer's own error
    names a type, not the character."""
    try:
        text.encode("utf-8")
    except UnicodeEncodeError as error:
        raise ValueError(f"{name} is not valid text: character U+{ord(text[error.start]):04X} at position "
                         f"{error.start} is a lone surrogate (invalid UTF-8)") from None


def check_prompt(prompt: str) -> None:
    """A prompt a run can take: not blank, and text a tokenizer can read (check_text)."""
    if not prompt.strip():
        raise ValueError("the prompt is empty")
    check_text("the prompt", prompt)


def encode_prompt(tokenizer, prompt: str, raw: bool = False, history: tuple[tuple[str, str], ...] = ()) -> list[int]:
    """Token ids of the prompt; by default wrapped in the model's chat template as one user turn,
    after the earlier turns of the conversation (history: (user, assistant) pairs, oldest first).
    Raw, a conversation is its turns' text joined by blank lines."""
    check_prompt(prompt)
    for turn in history:
        for part in turn:
            check_text("the conversation's history", part)
    if raw or not getattr(tokenizer, "chat_template", None):
        text = "\n\n".join([part for turn in history for part in turn] + [prompt])
        return tokenizer(text, add_special_tokens=True)["input_ids"]
    messages = [{"role": role, "content": content} for user, assistant in history
                for role, content in (("user", user), ("assistant", assistant))]
    messages.append({"role": "user", "content": prompt})
    ids = tokenizer.apply_chat_template(messages, add_generation_prompt=True, tokenize=True)
    if hasattr(ids, "keys"):  # transformers 5 returns a BatchEncoding
        ids = ids["input_ids"]
    return list(ids)


class Detokenizer:
    """Text pieces per token, for streaming and colouring.

    A token can end inside a multi-byte character; its piece is then empty and the character comes
    out with the token that completes it. Decoding a short window (prefix..end) keeps this O(1) per
    token while letting the tokenizer see the context it needs for spaces.
    """

    def __init__(self, tokenizer):
        self.tokenizer = tokenizer
        self.ids: list[int] = []
        self.prefix = 0  # start of the context window
        self.read = 0  # end of what has been emitted

    def add(self, token: int) -> str:
        self.ids.append(token)
        seen = self._decode(self.ids[self.prefix : self.read])
        full = self._decode(self.ids[self.prefix :])
        if len(full) > len(seen) and not full.endswith("\ufffd"):
            self.prefix, self.read = self.read, len(self.ids)
            return full[len(seen) :]
        return ""

    def _decode(self, ids: list[int]) -> str:
        return self.tokenizer.decode(ids, skip_special_tokens=True)
