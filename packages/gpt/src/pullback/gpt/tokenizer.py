"""Character tokenizer: the sorted set of characters of the corpus."""

from __future__ import annotations

from typing import Any, Iterable


class CharTokenizer:
    """Maps each character of a fixed alphabet to an integer and back."""

    def __init__(self, chars: Iterable[str]) -> None:
        self.chars = sorted(set(chars))
        if not self.chars:
            raise ValueError("a tokenizer needs at least one character")
        self._index = {c: i for i, c in enumerate(self.chars)}

    @classmethod
    def from_text(cls, text: str) -> CharTokenizer:
        """The tokenizer of every character that occurs in ``text``."""
        return cls(text)

    @property
    def vocab_size(self) -> int:
        return len(self.chars)

    def encode(self, text: str) -> list[int]:
        """Token ids of ``text``; a character outside the alphabet is a clear error."""
        try:
            return [self._index[c] for c in text]
        except KeyError as exc:
            raise ValueError(
                f"character {exc.args[0]!r} is not in the tokenizer's alphabet of "
                f"{self.vocab_size} characters"
            ) from None

    def decode(self, ids: Iterable[int]) -> str:
        """The text of token ids."""
        return "".join(self.chars[int(i)] for i in ids)

    def to_dict(self) -> dict[str, Any]:
        return {"type": "char", "chars": "".join(self.chars)}

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> CharTokenizer:
        """The tokenizer :meth:`to_dict` wrote (TypeError or ValueError for anything else)."""
        if not isinstance(data, dict) or data.get("type") != "char":
            kind = data.get("type") if isinstance(data, dict) else type(data).__name__
            raise ValueError(f"not a character tokenizer: {kind!r}")
        chars = data.get("chars")
        if not isinstance(chars, str) or len(set(chars)) != len(chars):
            raise ValueError(f"a character tokenizer's 'chars' must be a string of distinct "
                             f"characters, got {type(chars).__name__} {str(chars)[:40]!r}")
        return cls(chars)
