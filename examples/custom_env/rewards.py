"""The reward: 1.0 for the right number, and a part that says whether the agent used a tool."""


def numeric_match(answer, ground_truth, tool_results=(), **context):
    try:
        right = answer is not None and abs(float(answer.replace(",", "")) - float(ground_truth)) < 1e-6
    except ValueError:  # the answer is not a number
        right = False
    return {"score": float(right), "used_tool": float(any(not r["is_error"] for r in tool_results))}
