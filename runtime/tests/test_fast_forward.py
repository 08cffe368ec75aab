"""Forced text appended in one batch: the worker's decoding loop, in this process.

What the fast path writes must be what the model could have written under the grammar,
token for token: every token is one llama.cpp's grammar sampler allows, each forced run is
split as the model's own tokenizer splits the text (with the token before it), and where the
model prefers the tokens its tokenizer makes, decoding token by token writes the very same
tokens.
"""

from __future__ import annotations

from collections.abc import Iterator
import itertools
from pathlib import Path
from typing import Any

import llama_cpp
from llama_cpp.llama_grammar import LlamaGrammar
import pytest

from botpsy_runtime import worker
from scripts.testing.grammar_check import GrammarChecker
from scripts.testing.tiny_gguf import write_tiny_model

from .grammars import call_grammar

PROMPT = "<|im_start|>user\nturn off the kitchen light<|im_end|>\n<|im_start|>assistant\n"
ids = itertools.count(1)


def load(path: Path) -> worker.Model:
    return worker.Model({"model_path": str(path), "n_ctx": 1024, "n_batch": 64, "n_threads": 1})


@pytest.fixture(scope="module", params=["qwen3", "gemma3", "qwen35"])
def model(request: pytest.FixtureRequest, tiny_models: dict[str, Path]) -> worker.Model:
    return load(tiny_models[request.param])


@pytest.fixture(scope="module")
def favoring(tmp_path_factory: pytest.TempPathFactory) -> worker.Model:
    """A tiny model whose greedy choice is the longest token that fits."""
    path = write_tiny_model(tmp_path_factory.mktemp("favoring") / "tiny.gguf", "qwen3", favor_long_tokens=True)
    return load(path)


def generate(model: worker.Model, grammar: str, **options: Any) -> tuple[str, dict[str, Any], list[tuple[int, bool]]]:
    request = {
        "id": next(ids),
        "prompt": PROMPT,
        "grammar": grammar,
        "max_tokens": 400,
        "temperature": 0.0,
        "top_k": 40,
        "top_p": 0.95,
        "seed": 0,
        **options,
    }
    events = list(model.generate(request, set()))
    text = "".join(e.get("text", "") for e in events)
    done = events[-1]["done"]
    return text, {**done["timings"], "reason": done["reason"]}, list(model.last_output)


def grammar_allows(model: worker.Model, grammar: str, tokens: list[int]) -> bool:
    """Replay `tokens` through a fresh llama.cpp grammar sampler."""
    sampler = llama_cpp.llama_sampler_init_grammar(model.vocab.vocab, grammar.encode(), b"root")
    data = (llama_cpp.llama_token_data * 1)()
    array = llama_cpp.llama_token_data_array(data, 1, -1, False)
    try:
        for token in tokens:
            data[0].id, data[0].logit = token, 0.0
            llama_cpp.llama_sampler_apply(sampler, llama_cpp.ctypes.byref(array))
            if data[0].logit == float("-inf"):
                return False
            llama_cpp.llama_sampler_accept(sampler, token)
        return True
    finally:
        llama_cpp.llama_sampler_free(sampler)


def forced_runs(output: list[tuple[int, bool]], before: int) -> Iterator[tuple[int, list[int], list[int]]]:
    """Each run of forced tokens, with the token before it and the (sampled) ones after it."""
    groups = [(forced, [token for token, _ in group]) for forced, group in itertools.groupby(output, lambda i: i[1])]
    previous = before
    for index, (forced, tokens) in enumerate(groups):
        if forced:
            yield previous, tokens, groups[index + 1][1] if index + 1 < len(groups) else []
        previous = tokens[-1]


def assert_seams_are_the_tokenizers(model: worker.Model, output: list[tuple[int, bool]]) -> int:
    """Each forced run is the tokenizer's own split of its text, with the token before it;
    and the tokenizer puts a boundary where the run ends, whatever the model wrote next."""
    runs = list(forced_runs(output, model.tokenize(PROMPT)[-1]))
    for previous, run, after in runs:
        text = b"".join(model.vocab.piece(t, special=True) for t in [previous, *run])
        assert model.llm.tokenize(text, add_bos=False, special=True) == [previous, *run]
        following = b"".join(model.vocab.piece(t, special=True) for t in after)
        split = model.llm.tokenize(text + following, add_bos=False, special=True)
        assert split[: len(run) + 1] == [previous, *run], (text, following)
    return sum(len(run) for _, run, _ in runs)


@pytest.fixture(scope="module")
def checker(tiny_models: dict[str, Path]) -> GrammarChecker:
    return GrammarChecker(tiny_models["qwen3"])


@pytest.mark.parametrize("fmt", ["qwen_xml", "hermes_json", "gemma"])
@pytest.mark.parametrize("temperature", [0.0, 0.8])
def test_fast_path_writes_what_the_model_could_have_written(
    model: worker.Model, checker: GrammarChecker, fmt: str, temperature: float
) -> None:
    grammar = call_grammar(fmt, "one_call")
    for seed in range(3):
        text, done, output = generate(model, grammar, temperature=temperature, seed=seed)
        tokens = [token for token, _ in output]
        assert done["reason"] == "stop", text
        assert checker.accepts(grammar, text), text
        # Every token, sampled or forced, is one the grammar allows where it stands...
        assert grammar_allows(model, grammar, tokens)
        assert model.vocab.is_eog(model.vocab.eog)
        # ...the text is the tokens' text...
        assert b"".join(model.vocab.piece(t) for t in tokens).decode() == text
        # ...and the forced runs are split as the model's tokenizer splits the text.
        forced = assert_seams_are_the_tokenizers(model, output)
        assert forced > 0
        assert done["forced_tokens"] == forced
        assert done["decoded_tokens"] == len(tokens) - forced


@pytest.mark.parametrize("seed", range(4))
def test_forced_text_leaves_its_last_token_to_the_model(model: worker.Model, seed: int) -> None:
    """ " the" is one token: forced "x " must not end in a lone space token the model would
    then have to follow with "the" split apart."""
    grammar = 'root ::= "<tool_call>x " ( "the" | "tin" | "to" ) "</tool_call>"'
    text, done, output = generate(model, grammar, temperature=1.0, seed=seed)
    assert done["reason"] == "stop" and done["forced_tokens"] > 0, text
    assert_seams_are_the_tokenizers(model, output)


@pytest.mark.parametrize("fmt", ["qwen_xml", "hermes_json", "gemma"])
def test_fast_path_equals_token_by_token_decoding(favoring: worker.Model, fmt: str) -> None:
    """Where greedy decoding picks the tokens the tokenizer makes, fast-forwarding changes
    nothing but how many tokens are sampled."""
    grammar = call_grammar(fmt, "one_call")
    fast_text, fast, fast_output = generate(favoring, grammar)
    slow_text, slow, slow_output = generate(favoring, grammar, fast_forward=False)
    assert fast_text == slow_text
    assert [t for t, _ in fast_output] == [t for t, _ in slow_output]
    assert slow["forced_tokens"] == 0
    assert fast["forced_tokens"] > 0
    assert fast["decoded_tokens"] + fast["forced_tokens"] == slow["decoded_tokens"]
    assert fast["decoded_tokens"] * 2 <= slow["decoded_tokens"]


def test_grammar_last_sampling_equals_grammar_first(model: worker.Model) -> None:
    """Greedy: the plain chain's choice, checked by the grammar afterwards (and resampled
    with the grammar only when refused), is the grammar-first choice of llama-cpp-python."""
    grammar = call_grammar("qwen_xml", "one_call")
    _text, done, output = generate(model, grammar, fast_forward=False)
    ours = [token for token, _ in output]
    llm = model.llm
    theirs: list[int] = []
    for token in llm.generate(model.tokenize(PROMPT), temp=0.0, grammar=LlamaGrammar.from_string(grammar)):
        if model.vocab.is_eog(token) or len(theirs) == len(ours) + 1:
            break
        theirs.append(token)
    assert ours == theirs
    assert done["decoded_tokens"] == len(ours)
    llm.reset()


def test_forced_text_counts_against_max_tokens(model: worker.Model) -> None:
    grammar = 'root ::= "<tool_call>" " this text is all forced, no choice in it" [a-z]+'
    text, done, output = generate(model, grammar, max_tokens=4)
    assert done["reason"] == "length"
    assert len(output) == 4
    assert done["decoded_tokens"] == 0 and done["forced_tokens"] == 4
    assert text == b"".join(model.vocab.piece(t) for t, _ in output).decode()


def test_a_wholly_forced_grammar_samples_nothing(model: worker.Model) -> None:
    text, done, _output = generate(model, 'root ::= "<tool_call>\\nlight.kitchen\\n</tool_call>"')
    assert text == "<tool_call>\nlight.kitchen\n</tool_call>"
    assert done["reason"] == "stop"
    assert done["decoded_tokens"] == 0 and done["forced_tokens"] > 0


def test_stop_string_inside_forced_text(model: worker.Model) -> None:
    text, done, _output = generate(model, 'root ::= "abc STOP def" [a-z]+', stop=["STOP"])
    assert (text, done["reason"]) == ("abc ", "stop")
