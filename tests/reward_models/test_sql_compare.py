"""The evaluator comparisons, case by case: what the official Spider / BIRD evaluators decide, and where this
project is stricter (each such case says why)."""

import pytest

from rlfactory_reward_models.sql.compare import MAX_PERMUTATIONS, bird_match, spider_match

# (name, gold rows, predicted rows, order_matters, expected Spider verdict)
SPIDER_CASES = [
    ("identical", [(1, "a"), (2, "b")], [(1, "a"), (2, "b")], False, True),
    ("columns permuted", [(1, "a"), (2, "b")], [("a", 1), ("b", 2)], False, True),
    ("columns permuted, ordered", [(1, "a"), (2, "b")], [("a", 1), ("b", 2)], True, True),
    ("rows reordered, order free", [(1,), (2,), (3,)], [(3,), (1,), (2,)], False, True),
    ("rows reordered, gold ORDER BY", [(1,), (2,), (3,)], [(3,), (1,), (2,)], True, False),
    ("multiset: a duplicate counts", [(1,), (1,), (2,)], [(1,), (2,), (2,)], False, False),
    ("multiset: missing duplicate", [(1,), (1,)], [(1,)], False, False),
    ("extra column", [(1,)], [(1, 1)], False, False),
    ("int equals float (1 == 1.0)", [(1, 2)], [(1.0, 2.0)], False, True),
    ("float precision is exact", [(0.3,)], [(0.1 + 0.2,)], False, False),
    ("text is not a number", [("1",)], [(1,)], False, False),
    ("NULL equals NULL", [(None, 1)], [(None, 1)], False, True),
    ("NULL is not 0", [(None,)], [(0,)], False, False),
    ("NULL is not ''", [(None,)], [("",)], False, False),
    ("text compares case-sensitively", [("Paris",)], [("paris",)], False, False),
    ("both empty, same width", [], [], False, True),
    ("one empty", [(1,)], [], False, False),
    ("permutation that only works for some rows", [(1, 2), (3, 4)], [(2, 1), (3, 4)], False, False),
    ("equal columns need a joint permutation", [(1, 1, 2), (2, 2, 1)], [(1, 2, 1), (2, 1, 2)], False, True),
    ("same column sets, rows paired differently", [(1, "a"), (2, "b")], [(1, "b"), (2, "a")], False, False),
]


@pytest.mark.parametrize("name,gold,pred,order,expected", SPIDER_CASES, ids=[c[0] for c in SPIDER_CASES])
def test_spider_comparison(name, gold, pred, order, expected):
    verdict = spider_match(gold, pred, order_matters=order, gold_columns=len(gold[0]) if gold else 1,
                           pred_columns=len(pred[0]) if pred else 1)
    assert bool(verdict) is expected, verdict
    assert (verdict.reason is None) is expected


def test_spider_and_official_agree_on_a_random_permutation_with_many_columns():
    # The official evaluator prunes permutations with 20 random rows; an exhaustive search reaches the same verdict.
    gold = [(i, i * 2, i * 3, i * 5, f"t{i}") for i in range(30)]
    pred = [(r[4], r[3], r[0], r[2], r[1]) for r in reversed(gold)]
    assert spider_match(gold, pred, order_matters=False)
    assert not spider_match(gold, pred, order_matters=True)
    assert "another order" in spider_match(gold, pred, order_matters=True).reason


def test_empty_results_need_the_same_width():
    # Stricter than the official evaluator (any two empty results match there): otherwise `SELECT 1 WHERE 0`
    # would score on every question whose gold result is empty.
    assert spider_match([], [], order_matters=False, gold_columns=2, pred_columns=2)
    verdict = spider_match([], [], order_matters=False, gold_columns=2, pred_columns=1)
    assert not verdict and "empty" in verdict.reason
    assert not bird_match([], [], gold_columns=1, pred_columns=3)
    assert bird_match([], [], gold_columns=3, pred_columns=3)


def test_too_many_candidate_permutations_is_a_mismatch_not_a_guess():
    # Nine columns that all hold {0, 1}: every one of the 9! permutations passes the column-multiset filter. The
    # one that fits maps gold column 0 to predicted column 8, which the search reaches only after 8! = 40,320
    # others: past MAX_PERMUTATIONS the verdict is "different", never a guess.
    gold = [(1,) + (0,) * 8, (0,) + (1,) * 8]
    pred = [(0,) * 8 + (1,), (1,) * 8 + (0,)]
    assert MAX_PERMUTATIONS < 40_320
    verdict = spider_match(gold, pred, order_matters=False)
    assert not verdict and "permutations" in verdict.reason
    # the same rows with the fitting permutation early are found
    assert spider_match(gold, [(1,) + (0,) * 8, (0,) + (1,) * 8], order_matters=False)


# (name, gold rows, predicted rows, expected BIRD verdict)
BIRD_CASES = [
    ("identical", [(1, "a")], [(1, "a")], True),
    ("row order ignored", [(1,), (2,)], [(2,), (1,)], True),
    ("duplicates ignored (sets)", [(1,), (1,), (2,)], [(1,), (2,)], True),
    ("columns NOT permuted", [(1, "a")], [("a", 1)], False),
    ("int equals float", [(3,)], [(3.0,)], True),
    ("NULL equals NULL", [(None,)], [(None,)], True),
    ("missing row", [(1,), (2,)], [(1,)], False),
]


@pytest.mark.parametrize("name,gold,pred,expected", BIRD_CASES, ids=[c[0] for c in BIRD_CASES])
def test_bird_comparison(name, gold, pred, expected):
    assert bool(bird_match(gold, pred)) is expected
