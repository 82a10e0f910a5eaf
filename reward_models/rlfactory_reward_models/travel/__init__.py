"""TravelPlanner's official evaluation of a submitted plan, reproduced over the sandbox store: the query
(``query``), the submission's text (``plan_text``), the commonsense and hard constraints (``commonsense``,
``hard``), one plan's verdict (``evaluate``), the benchmark's table over many (``report``) and the reward
(``reward``)."""
