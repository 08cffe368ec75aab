"""The engine floor on real llama.cpp (a tiny model): both floors, from the same prompt."""

from __future__ import annotations

from pathlib import Path

from scripts.benchmark.floor import Floor, FloorInput, measure_floor

PREFIX = "<|im_start|>system\nYou control a home.<|im_end|>\n<|im_start|>user\n"
BLOCK = 'Devices now:\n{"entity_id":"light.kitchen","state":"on"}\n\nRequest:'
WORDS = " Turn off the kitchen light"
PROMPT = f"{PREFIX}{BLOCK}{WORDS}<|im_end|>\n<|im_start|>assistant\n"
CALL = '{"name": "light", "arguments": {"entity_id": "light.kitchen", "action": "turn_off"}}'


def test_the_batched_floor_evaluates_the_words_decodes_the_choices_and_batches_the_rest(tiny_model: Path) -> None:
    task = FloorInput(PROMPT, len(PREFIX), PROMPT.index(WORDS), CALL, 3, 0.0, 40, 1.0)
    floor = measure_floor(str(tiny_model), {"n_ctx": 512, "n_batch": 64, "n_threads": 1}, task, 1)
    # The user's turn holds the block and the words; the batched floor evaluates the words only.
    assert 0 < floor["words_tokens"] < floor["user_turn_tokens"] < floor["prompt_tokens"]
    assert floor["choice_tokens"] == 3 and floor["choice_tokens"] + floor["fixed_tokens"] == floor["call_tokens"]
    parts = floor["words_prefill_s"] + 3 * floor["decode_token_s"] + floor["fixed_batched_s"]
    assert abs(floor["engine_floor_batched_s"] - parts) < 1e-3


def test_the_floor_is_measured_in_parts_and_reported_over_all_of_them(tiny_model: Path) -> None:
    """The bench measures the floor between its runs of warm requests: every part counts."""
    task = FloorInput(PROMPT, len(PREFIX), PROMPT.index(WORDS), CALL, 3, 0.0, 40, 1.0)
    floor = Floor(str(tiny_model), {"n_ctx": 512, "n_batch": 64, "n_threads": 1}, task)
    try:
        floor.measure(1)
        assert floor.figures()["runs"] == 1
        floor.measure(2)
        figures = floor.figures()
    finally:
        floor.close()
    assert figures["runs"] == 3
    assert figures["choice_tokens"] == 3 and figures["batched_call_s"] is not None
