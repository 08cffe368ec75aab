"""How often BotPsy answers before the model, and how often that answer is wrong.

`python -m scripts.evaluation.early --dataset DIR [DIR ...]`: loads each home into a real
Home Assistant (no model), runs the request's first steps as the agent does (what it
names, whether it asks, what HA's own sentences read exactly, then `Scope.early_answer`)
on every sentence, and counts the early answers. An exact reading (`exact`: calls made
without the model) is wrong where it acts on other devices than the case's: the target
of a device-actions group, the entities HA's handling of an intents case acts on, those
an assist case expects changed; or where the case expects no action.
Another early answer is wrong where the case expects an action: a change, a device acted
on (device-actions groups) or an intent that HA's own handling acts with; so is a
request for an action read as a question (it is never done). Lists the wrong ones, and
counts apart the questions read as requests (only the model keeps those from acting).
In a language the word rules do not read, HA's intent matching reads as the agent does.

A question back ("Which Bedroom Light do you mean: … in the Master Bedroom or … in the
Guest Bedroom?") is counted apart, as ambiguous, where no word of the request tells the
devices listed apart and the case's target is one of them: no rule or model can know
which one is meant (the suite's target there is one of them, by the suite's choice).
"""

from __future__ import annotations

import argparse
import asyncio
from collections import Counter
from dataclasses import dataclass
import json
from pathlib import Path
import re
import tempfile

from homeassistant.components import conversation
from homeassistant.core import Context, HomeAssistant
from homeassistant.helpers import llm

from custom_components.botpsy.core.home import HomeEntity
from custom_components.botpsy.core.policy import is_question
from custom_components.botpsy.core.requested import named_in
from custom_components.botpsy.core.tools import compile_tools
from custom_components.botpsy.exact import Heard, async_exact_request, async_heard
from custom_components.botpsy.home_snapshot import async_snapshot_home
from custom_components.botpsy.language import async_recognize, read_in_language, reads_english
from custom_components.botpsy.request import Scope
from custom_components.botpsy.toolbox import Toolbox

from .dataset import Case, HomeCases, load_suite
from .fixtures import home_from_mapping
from .home_loader import LoadedHome, async_load_home, eval_hass
from .run import expected_intent, home_entities, target_entity


@dataclass(slots=True)
class EarlyAnswer:
    case: str
    sentence: str
    answer: str
    # The case wanted an action: the model was not asked for one it was expected to make.
    wrong: bool
    # ... but the request could mean any of the devices the answer asks between.
    ambiguous: bool = False
    # A question the rules read as a request (no early answer: counted apart).
    question_missed: bool = False
    # Calls HA's sentences read exactly (the answer lists the devices they act on).
    exact: bool = False


def _words(text: str) -> set[str]:
    return {w[:-1] if w.endswith("s") and len(w) > 3 else w for w in re.findall(r"[^\W\d_]{3,}", text.lower())}


def _ambiguous(sentence: str, listed: list[HomeEntity], target: str | None) -> bool:
    """Whether no word of `sentence` is in the name or area of only some of `listed`,
    and the case's `target` (if it names one) is one of them."""
    if len(listed) < 2 or (target is not None and target not in {e.entity_id for e in listed}):
        return False
    said = _words(sentence)
    seen = [said & _words(f"{e.name} {e.area or ''}") for e in listed]
    return all(words == seen[0] for words in seen)


async def _wants_action(hass: HomeAssistant, home: LoadedHome, case: Case, device_id: str | None) -> bool:
    return bool(await _acted_on(hass, home, case, device_id))


async def _acted_on(hass: HomeAssistant, home: LoadedHome, case: Case, device_id: str | None) -> set[str]:
    """The devices the case expects acted on (none: it expects no action)."""
    if case.intent is None:
        target = {target_entity(home.fixture, case)} if case.target else set()
        return target | set(case.expect_changes)
    expected, _setup = await expected_intent(hass, home, case, device_id, home_entities(hass))
    return set(expected.targets) | set(expected.changes)


async def _home_answers(home_cases: HomeCases) -> list[EarlyAnswer]:
    fixture = home_from_mapping(home_cases.fixture)
    answers = []
    with tempfile.TemporaryDirectory(prefix="botpsy-early-") as config_dir:
        async with eval_hass(Path(config_dir), language=fixture.language) as hass:
            loaded = await async_load_home(hass, fixture)
            home = await async_snapshot_home(hass)
            toolbox = Toolbox(compiled=list(compile_tools(home)), home=home, hass=hass)
            areas = {a.area_id: a.name for a in fixture.areas} | {a.name: a.name for a in fixture.areas}
            english = reads_english(fixture.language)
            for case in home_cases.cases:
                here = areas.get(case.context_area or "")
                device_id = loaded.satellite_device(case.context_area) if case.context_area else None
                named = named_in(case.sentence, home.entities, here=here)
                recognized = await async_recognize(hass, case.sentence, fixture.language, device_id=device_id)
                context = llm.LLMContext("botpsy", Context(), fixture.language, conversation.DOMAIN, device_id)
                heard = await async_heard(hass, Heard(case.sentence, fixture.language, recognized, context))
                exact = await async_exact_request(hass, toolbox, heard)
                if exact is not None:
                    acted = {str(c.arguments["entity_id"]) for c in exact}
                    wanted = await _acted_on(hass, loaded, case, device_id)
                    answers.append(
                        EarlyAnswer(case.id, case.sentence, f"(exact) {sorted(acted)}", acted != wanted, exact=True)
                    )
                    continue
                if english:
                    question = is_question(case.sentence)
                else:
                    named, question = read_in_language(
                        case.sentence, named, home.entities, recognized, fixture.language
                    )
                scope = Scope(case.sentence, toolbox, [], named, question, english=english)
                if question and not case.expect_response and await _wants_action(hass, loaded, case, device_id):
                    # Taken for a question, a request for an action is never done.
                    answers.append(EarlyAnswer(case.id, case.sentence, "(read as a question)", True))
                elif not question and case.expect_response and not case.expect_changes:
                    # A question taken for a request: only the model keeps it from acting.
                    answers.append(
                        EarlyAnswer(case.id, case.sentence, "(question read as a request)", False, False, True)
                    )
                if (answer := scope.early_answer()) is not None:
                    wrong = await _wants_action(hass, loaded, case, device_id)
                    target = target_entity(fixture, case) if case.target else None
                    ambiguous = wrong and _ambiguous(case.sentence, toolbox.one_of_several(named), target)
                    answers.append(EarlyAnswer(case.id, case.sentence, answer, wrong and not ambiguous, ambiguous))
    return answers


async def audit(roots: list[Path]) -> dict[str, object]:
    suites = []
    for root in roots:
        suite = load_suite(root)
        read = [a for home in suite.homes for a in await _home_answers(home)]
        missed = [a for a in read if a.question_missed]
        exact = [a for a in read if a.exact]
        answers = [a for a in read if not (a.question_missed or a.exact)]
        wrong = [a for a in answers if a.wrong]
        ambiguous = [a for a in answers if a.ambiguous]
        total = len(suite.cases)
        suites.append(
            {
                "suite": suite.name,
                "requests": total,
                "early_answers": len(answers),
                "wrong": len(wrong),
                "wrong_share": round(100 * len(wrong) / total, 2) if total else 0.0,
                "wrong_by_answer": Counter(a.answer.split(":")[0] for a in wrong).most_common(),
                "wrong_cases": [{"id": a.case, "sentence": a.sentence, "answer": a.answer} for a in wrong],
                "ambiguous": len(ambiguous),
                "ambiguous_cases": [{"id": a.case, "sentence": a.sentence, "answer": a.answer} for a in ambiguous],
                "exact": len(exact),
                "exact_wrong": len(wrong_exact := [a for a in exact if a.wrong]),
                "exact_wrong_cases": [{"id": a.case, "sentence": a.sentence, "acted": a.answer} for a in wrong_exact],
                "questions_read_as_requests": len(missed),
                "questions_read_as_requests_cases": [{"id": a.case, "sentence": a.sentence} for a in missed],
            }
        )
    return {"suites": suites}


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(prog="python -m scripts.evaluation.early", description=__doc__)
    parser.add_argument("--dataset", type=Path, nargs="+", required=True)
    parser.add_argument("--out", type=Path, default=Path("out/early.json"))
    args = parser.parse_args(argv)
    result = asyncio.run(audit(args.dataset))
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(result, indent=2, ensure_ascii=False) + "\n")
    for suite in result["suites"]:  # type: ignore[attr-defined]
        print(
            f"{suite['suite']}: {suite['early_answers']} early answers in {suite['requests']} requests, "
            f"{suite['wrong']} wrong ({suite['wrong_share']} %), {suite['ambiguous']} ambiguous asked which, "
            f"{suite['questions_read_as_requests']} questions read as requests; "
            f"{suite['exact']} read exactly by HA's sentences, {suite['exact_wrong']} of them wrong"
        )


if __name__ == "__main__":
    main()
