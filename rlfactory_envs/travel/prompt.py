"""The travel family's prompt: gather information with the sandbox tools, then submit the plan in the benchmark's
submission format."""

from __future__ import annotations

import json

from rlfactory_envs.travel.query import TravelQuery

_EXAMPLE = [  # an illustration with invented names; real plans use what the tools show
    {"days": 1, "current_city": "from Ashford to Belmoor",
     "transportation": "Flight Number: F0000001, from Ashford to Belmoor, Departure Time: 08:05, Arrival Time: 10:20",
     "breakfast": "-", "attraction": "Belmoor Old Harbour, Belmoor;", "lunch": "Copper Kettle, Belmoor",
     "dinner": "Lantern House, Belmoor", "accommodation": "Quiet Room by the Park, Belmoor"},
    {"days": 2, "current_city": "Belmoor", "transportation": "-", "breakfast": "Morning Loaf, Belmoor",
     "attraction": "Belmoor Museum of Art, Belmoor;Riverside Gardens, Belmoor;", "lunch": "Green Table, Belmoor",
     "dinner": "Saffron Road, Belmoor", "accommodation": "Quiet Room by the Park, Belmoor"},
    {"days": 3, "current_city": "from Belmoor to Ashford",
     "transportation": "Flight Number: F0000002, from Belmoor to Ashford, Departure Time: 18:40, Arrival Time: 20:55",
     "breakfast": "Dockside Bakery, Belmoor", "attraction": "Clock Tower Square, Belmoor;",
     "lunch": "Noodle Bar Nine, Belmoor", "dinner": "-", "accommodation": "-"},
]

INSTRUCTIONS = """\
You are a travel planner. Plan the trip the query below asks for, using only information from the travel \
sandbox's tools: search_flights (origin, destination, date YYYY-MM-DD), distance_matrix (origin, destination, \
mode "self-driving" or "taxi"), search_accommodations, search_restaurants and search_attractions (a city), \
search_cities (the cities of a state), and notebook_write / notebook_read to keep what you found. Call several \
tools in one turn when you can.

When you are ready, give the whole plan inside <answer> and </answer> as a JSON list with one object per day and \
the keys days, current_city, transportation, breakfast, attraction, lunch, dinner, accommodation. Write every \
place as "Name, City" exactly as the tools show it, attractions as "Name, City;" each, flights as \
"Flight Number: F0123456, from A to B, Departure Time: HH:MM, Arrival Time: HH:MM", driving as \
"Self-driving, from A to B, duration: ..., distance: ..., cost: ..." (or "Taxi, ..."), a travel day's \
current_city as "from A to B", and "-" where nothing applies (no accommodation on the last day). The plan is \
checked against the sandbox and commonsense (real places in that day's city, no restaurant or attraction twice, \
minimum nights of stay, one kind of ground transport, a closed route back home) and against the query's budget \
and its requirements on rooms, house rules, cuisines and transportation. For example, a 3-day trip:
<answer>{example}</answer>"""


def travel_prompt(query: TravelQuery) -> str:
    """The user message of an episode."""
    example = json.dumps(_EXAMPLE, ensure_ascii=False)
    return INSTRUCTIONS.format(example=example) + f"\n\nQuery: {query.query or describe(query)}"


def describe(query: TravelQuery) -> str:
    """A query's request in words, for a row that carries no natural-language ``query``."""
    dates = f"from {query.date[0]} to {query.date[-1]}" if query.date else ""
    where = query.dest if query.visiting_city_number == 1 else f"{query.visiting_city_number} cities in {query.dest}"
    parts = [f"Plan a {query.days}-day trip from {query.org} to {where} {dates} for {query.people_number} "
             f"{'person' if query.people_number == 1 else 'people'} with a budget of ${query.budget:,.0f}."]
    if query.house_rule:
        parts.append(f"The accommodation must allow {query.house_rule}.")
    if query.room_type:
        parts.append(f"The room type must be: {query.room_type}.")
    if query.cuisines:
        parts.append(f"We want to try these cuisines: {', '.join(query.cuisines)}.")
    if query.transportation:
        parts.append(f"Transportation: {query.transportation}.")
    return " ".join(parts)
