"""SYNTHETIC SAMPLE, NOT REAL DATA: a small fictional TravelPlanner sandbox, queries and reference plans.

Every state, city, restaurant, attraction, lodging, flight and distance below was invented for this project (four
states of the fictional country of Velmora, plus two states the travellers come from); nothing is copied from
TravelPlanner's database. The generator is deterministic (``random.Random`` with a fixed seed) and writes, under
``rlfactory_envs/travel/data/sample/``:

- ``database/``: the sandbox in TravelPlanner's exact layout and CSV headers -- ``accommodations/
  clean_accommodations_2022.csv``, ``attractions/attractions.csv``, ``restaurants/clean_restaurant_2022.csv``,
  ``googleDistanceMatrix/distance.csv`` (every ordered pair of sample cities), ``flights/clean_Flights_2022.csv``
  (the flights the queries need, outbound to every candidate city, return and the reference transfers) and
  ``background/citySet.txt``, ``citySet_with_states.txt``, ``stateSet.txt``. Every field of every row is filled in
  (the official tools drop rows with a missing field).
- ``queries.jsonl``: 24 queries in TravelPlanner's row layout (``idx``, ``org``, ``dest``, ``days``,
  ``visiting_city_number``, ``date``, ``people_number``, ``local_constraint``, ``budget``, ``query``, ``level``),
  each level (easy / medium / hard) at each trip length (3 days and one city, 5 days and two cities of a state,
  7 days and three cities of a state).
- ``reference_plans.jsonl``: per query one plan in the official submission format ``{idx, query, plan}`` that
  meets every commonsense and hard constraint; the query's budget is set a little above that plan's cost
  (computed the official way), rounded up to a multiple of 100.

Names are chosen so the official evaluator's substring matching is unambiguous: no city name is part of another
city name or of a business name, no business name is part of another in its city, and no name holds a comma, a
semicolon or parentheses (the generator checks all of this). ``python -m rlfactory_envs.travel.sample_data`` rewrites
the files; a test checks the committed files equal what the generator writes.
"""

from __future__ import annotations

import csv
import io
import json
import math
import random
import shutil
import tempfile
from dataclasses import dataclass, field
from datetime import date, timedelta
from pathlib import Path
from typing import Any

__all__ = ["SAMPLE_DIR", "build", "main", "write_sample"]

SAMPLE_DIR = Path(__file__).resolve().parent / "data" / "sample"
SEED = 20220301
COUNTRY = "Velmora"

# Destination states: city -> (x km, y km) on a fictional map.
DEST_STATES: dict[str, dict[str, tuple[int, int]]] = {
    "Veradon": {"Brenmoor": (0, 0), "Quillford": (120, 60), "Ashcombe": (-90, 110), "Larkspur Falls": (60, -130)},
    "Norhaven": {"Dunmarrow": (650, 250), "Elsbury": (760, 180), "Kestrel Point": (700, 390),
                 "Ravensholm": (560, 330)},
    "Solmara": {"Aubervale": (300, -600), "Corrindale": (420, -520), "Mirefield": (210, -700),
                "Pellwyn": (380, -740), "Saltmere": (250, -480)},
    "Tarvessa": {"Glenhallow": (-550, -350), "Westerby": (-660, -280), "Ondridge": (-480, -460)},
}
# Where the travellers come from (no sandbox businesses there).
ORIGIN_STATES: dict[str, dict[str, tuple[int, int]]] = {
    "Calder": {"Arlow": (250, 420), "Penwick": (-420, 380)},
    "Lunmark": {"Harrowgate": (1050, -350), "Marlhurst": (-150, -1000)},
}
STATE_CODES = {"Veradon": "VD", "Norhaven": "NH", "Solmara": "SM", "Tarvessa": "TV", "Calder": "CD", "Lunmark": "LM"}

CONSTRAINT_CUISINES = ["Chinese", "American", "Italian", "Mexican", "Indian", "Mediterranean", "French"]
OTHER_CUISINES = ["Cafe", "Bakery", "Pizza", "Seafood", "BBQ", "Desserts", "Fast Food", "Tea"]
ALL_CUISINES = CONSTRAINT_CUISINES + OTHER_CUISINES
RESTAURANT_KINDS = {
    "Chinese": ["Noodle Bar", "Dumpling Parlor"], "American": ["Diner", "Grill"], "Italian": ["Trattoria", "Osteria"],
    "Mexican": ["Cantina", "Taqueria"], "Indian": ["Curry House", "Tandoor"], "Mediterranean": ["Mezze Bar", "Taverna"],
    "French": ["Brasserie", "Bistro"], "Cafe": ["Cafe", "Coffee Parlor"], "Bakery": ["Bakehouse", "Bakery"],
    "Pizza": ["Pizzeria", "Pizza Oven"], "Seafood": ["Oyster Bar", "Fish Kitchen"],
    "BBQ": ["Smokehouse", "Pit Barbecue"],
    "Desserts": ["Creamery", "Sweet Shop"], "Fast Food": ["Burger Shack", "Snack Bar"], "Tea": ["Tea Room", "Teahouse"],
}
RESTAURANT_WORDS = ["Copper", "Juniper", "Saffron", "Lantern", "Thistle", "Marigold", "Bramble", "Cobalt", "Driftwood",
                    "Ember", "Fennel", "Gilded", "Ironbark", "Jasmine", "Kettle", "Mossy", "Nutmeg", "Quince",
                    "Rosewater", "Sorrel", "Tamarind", "Velvet", "Willow", "Yarrow", "Zephyr", "Amber", "Briar",
                    "Clover", "Hazel", "Indigo"]
ATTRACTION_WORDS = ["Stonecutter", "Heron Marsh", "Bellweather", "Cinder Hill", "Foxglove", "Granary", "Kingfisher",
                    "Lamplighter", "Mariners", "Orchard Row", "Pilgrim", "Quarry Rim", "Riverbend", "Silverbirch",
                    "Tidewater", "Wrenfield", "Blackthorn", "Cormorant", "Dovecote", "Falconer", "Gullwing",
                    "Hawthorn", "Ivywood", "Old Weir"]
ATTRACTION_KINDS = ["Museum", "Gardens", "Park", "Gallery", "Aquarium", "Observatory", "Lighthouse", "Nature Reserve",
                    "Market Hall", "Sculpture Trail", "History Center", "Botanical Conservatory", "Zoo", "Bridge Walk"]
STREETS = ["Quay", "Mill", "Chapel", "Tanner", "Orchard", "Bell", "Harbour", "Granite", "Linden", "Weaver", "Ferry",
           "Saddler", "Pottery", "Rope Walk"]
STREET_KINDS = ["St", "Ave", "Rd", "Ln", "Way"]
LODGING_WORDS = ["Sunny", "Quiet", "Cozy", "Bright", "Spacious", "Charming", "Airy", "Rustic", "Modern", "Snug",
                 "Elegant", "Tranquil", "Homely", "Breezy"]
LODGING_KINDS = {
    "Entire home/apt": ["Loft", "Studio", "Cottage", "Bungalow", "Townhouse", "Flat", "Cabin", "Carriage House"],
    "Private room": ["Attic Room", "Guest Suite", "Garden Room", "Spare Bedroom", "Private Bedroom"],
    "Shared room": ["Bunk Room", "Shared Dorm", "Shared Sleeping Loft", "Hostel Bed"],
}
LODGING_TAILS = ["near the Old Mill", "by the River", "with Patio", "off Market Square", "with Courtyard View",
                 "in the Old Town", "above the Bakery Lane", "with Garden", "near the Harbour", "with Balcony",
                 "by the Park", "in a Quiet Street"]
HOUSE_RULES = ["parties", "smoking", "children under 10", "pets", "visitors"]
ROOM_TYPES = {"entire room": {"Entire home/apt"}, "private room": {"Private room"}, "shared room": {"Shared room"},
              "not shared room": {"Entire home/apt", "Private room"}}
ACCOMMODATIONS_PER_CITY = ["Entire home/apt"] * 3 + ["Private room"] * 3 + ["Shared room"] * 2
RESTAURANTS_PER_CITY = 10
ATTRACTIONS_PER_CITY = 7

# (level, days) of each query, in order; every level at every trip length.
QUERY_PLAN = ([("easy", 3)] * 3 + [("easy", 5)] * 3 + [("easy", 7)] * 2 + [("medium", 3)] * 3 + [("medium", 5)] * 3
              + [("medium", 7)] * 2 + [("hard", 3)] * 3 + [("hard", 5)] * 3 + [("hard", 7)] * 2)

ACCOMMODATION_HEADER = ["", "NAME", "room type", "price", "minimum nights", "review rate number", "house_rules",
                        "maximum occupancy", "city"]
RESTAURANT_HEADER = ["", "Name", "City", "Cuisines", "Average Cost", "Aggregate Rating"]
ATTRACTION_HEADER = ["Name", "Latitude", "Longitude", "Address", "Phone", "Website", "City"]
DISTANCE_HEADER = ["origin", "destination", "cost", "duration", "distance"]
FLIGHT_HEADER = ["Flight Number", "Price", "DepTime", "ArrTime", "ActualElapsedTime", "FlightDate", "OriginCityName",
                 "DestCityName", "Distance"]


@dataclass
class World:
    """The generated sandbox, as rows in file order plus lookups."""

    city_state: dict[str, str]
    coords: dict[str, tuple[int, int]]
    restaurants: list[dict[str, Any]] = field(default_factory=list)
    attractions: list[dict[str, Any]] = field(default_factory=list)
    accommodations: list[dict[str, Any]] = field(default_factory=list)
    distances: dict[tuple[str, str], tuple[str, str]] = field(default_factory=dict)
    flights: dict[tuple[str, str, str], list[dict[str, Any]]] = field(default_factory=dict)
    flight_numbers: set[str] = field(default_factory=set)

    def in_city(self, rows: list[dict[str, Any]], city: str, key: str = "City") -> list[dict[str, Any]]:
        return [row for row in rows if row[key] == city]


# --- formatting -----------------------------------------------------------------------------------------------


def _drive_duration(minutes: int) -> str:
    hours, mins = divmod(minutes, 60)
    unit = "min" if mins == 1 else "mins"
    if hours == 0:
        return f"{mins} {unit}"
    return f"{hours} {'hour' if hours == 1 else 'hours'} {mins} {unit}"


def _km_text(km: float) -> str:
    return f"{km:.1f} km" if km < 100 else f"{round(km):,} km"


def _km_value(text: str) -> float:
    return float(text.replace("km", "").replace(",", ""))


def drive_cost(distance_text: str, mode: str) -> int:
    """The official cost of one car (self-driving) or one taxi for a distance string such as ``1,144 km``."""
    km = _km_value(distance_text)
    return int(km * 0.05) if mode == "self-driving" else int(km)


def _minutes(duration: str) -> int:
    """Minutes in ``3 hours 12 mins`` / ``2 hours 24 minutes`` / ``1 hour 0 mins`` / ``52 mins``."""
    words, total = duration.split(), 0
    for number, unit in zip(words[::2], words[1::2]):
        total += int(number) * (60 if unit.startswith("hour") else 1)
    return total


def _clock(minutes: int) -> str:
    return f"{minutes // 60:02d}:{minutes % 60:02d}"


def _ordinal(day: int) -> str:
    suffix = "th" if 11 <= day % 100 <= 13 else {1: "st", 2: "nd", 3: "rd"}.get(day % 10, "th")
    return f"{day}{suffix}"


def _day_text(value: date) -> str:
    return f"{value.strftime('%B')} {_ordinal(value.day)}"


def _join_words(words: list[str]) -> str:
    return words[0] if len(words) == 1 else ", ".join(words[:-1]) + " and " + words[-1]


def _csv_text(header: list[str], rows: list[list[Any]]) -> str:
    buffer = io.StringIO()
    writer = csv.writer(buffer, lineterminator="\n")
    writer.writerow(header)
    writer.writerows(rows)
    return buffer.getvalue()


# --- the world ----------------------------------------------------------------------------------------------------


def _check_names(world: World) -> None:
    cities = list(world.city_state)
    bad = set(",;()")
    for city in cities:
        assert not bad & set(city), city
        assert "to " not in city.lower() and "from" not in city.lower(), city
        for other in cities:
            assert other == city or other not in city, (other, city)
    for rows, key, city_key in ((world.restaurants, "Name", "City"), (world.attractions, "Name", "City"),
                                (world.accommodations, "NAME", "city")):
        for city in {row[city_key] for row in rows}:
            names = [row[key] for row in rows if row[city_key] == city]
            for name in names:
                assert not bad & set(name), name
                assert not any(c in name for c in cities), name
                assert sum(name in other for other in names) == 1, (city, name)


def _build_world(rng: random.Random) -> World:
    city_state = {city: state for states in (DEST_STATES, ORIGIN_STATES) for state, cities in states.items()
                  for city in cities}
    coords = {city: xy for states in (DEST_STATES, ORIGIN_STATES) for cities in states.values()
              for city, xy in cities.items()}
    world = World(city_state, coords)
    restaurant_index = accommodation_index = 0
    for state, cities in DEST_STATES.items():
        code = STATE_CODES[state]
        area = 300 + 111 * list(DEST_STATES).index(state)
        for city, (x, y) in cities.items():
            # Restaurants: every city has every constraint cuisine as some restaurant's first cuisine.
            primaries = rng.sample(CONSTRAINT_CUISINES, len(CONSTRAINT_CUISINES))
            primaries += rng.sample(OTHER_CUISINES, RESTAURANTS_PER_CITY - len(primaries))
            rng.shuffle(primaries)
            words = rng.sample(RESTAURANT_WORDS, RESTAURANTS_PER_CITY)
            for word, primary in zip(words, primaries):
                extra = rng.sample([c for c in ALL_CUISINES if c != primary], rng.randint(1, 3))
                cuisines = [primary, *extra]
                rng.shuffle(cuisines)
                world.restaurants.append({
                    "": restaurant_index, "Name": f"{word} {rng.choice(RESTAURANT_KINDS[primary])}", "City": city,
                    "Cuisines": ", ".join(cuisines), "Average Cost": rng.randint(12, 95),
                    "Aggregate Rating": round(rng.uniform(2.8, 4.9), 1)})
                restaurant_index += 1
            # Attractions.
            for word in rng.sample(ATTRACTION_WORDS, ATTRACTIONS_PER_CITY):
                kind = rng.choice(ATTRACTION_KINDS)
                name = f"{word} {kind}"
                lat = 44.0 + (y + rng.uniform(-6, 6)) / 111.0
                lon = -96.0 + (x + rng.uniform(-6, 6)) / 80.0
                slug = name.lower().replace(" ", "")
                world.attractions.append({
                    "Name": name, "Latitude": f"{lat:.7f}", "Longitude": f"{lon:.7f}",
                    "Address": f"{rng.randint(2, 2400)} {rng.choice(STREETS)} {rng.choice(STREET_KINDS)}, {city}, "
                               f"{code} {rng.randint(10000, 99999)}, {COUNTRY}",
                    "Phone": f"({area}) 555-01{rng.randint(0, 99):02d}",
                    "Website": f"https://www.{slug}.example/", "City": city})
            # Accommodations: three entire homes, three private rooms, two shared rooms.
            words = rng.sample(LODGING_WORDS, len(ACCOMMODATIONS_PER_CITY))
            long_stay = rng.randrange(len(ACCOMMODATIONS_PER_CITY))
            for position, (word, room) in enumerate(zip(words, ACCOMMODATIONS_PER_CITY)):
                name = f"{word} {rng.choice(LODGING_KINDS[room])} {rng.choice(LODGING_TAILS)}"
                rules = rng.sample(HOUSE_RULES, 1 if rng.random() < 0.7 else 2)
                nights = rng.choice([3, 4, 5, 7, 30]) if position == long_stay else rng.choice([1, 1, 1, 2, 2])
                if room == "Entire home/apt":
                    price, occupancy = rng.randint(140, 780), rng.randint(2, 8)
                elif room == "Private room":
                    price, occupancy = rng.randint(55, 320), rng.randint(1, 3)
                else:
                    price, occupancy = rng.randint(30, 140), rng.randint(1, 4)
                world.accommodations.append({
                    "": accommodation_index, "NAME": name, "room type": room, "price": float(price),
                    "minimum nights": float(nights), "review rate number": float(rng.randint(1, 5)),
                    "house_rules": " & ".join(f"No {rule}" for rule in rules), "maximum occupancy": occupancy,
                    "city": city})
                accommodation_index += 1
    # The distance matrix: every ordered pair of cities, slightly asymmetric like Google's.
    names = list(world.city_state)
    for origin in names:
        for destination in names:
            if origin == destination:
                continue
            (x1, y1), (x2, y2) = coords[origin], coords[destination]
            pair = random.Random(f"{SEED}:{min(origin, destination)}:{max(origin, destination)}")
            km = math.hypot(x2 - x1, y2 - y1) * pair.uniform(1.15, 1.3) * rng.uniform(0.995, 1.005)
            speed = pair.uniform(88, 100) * rng.uniform(0.99, 1.01)
            minutes = int(km / speed * 60)
            assert minutes < 24 * 60, (origin, destination)
            world.distances[(origin, destination)] = (_drive_duration(minutes), _km_text(km))
    _check_names(world)
    return world


def _flights(world: World, rng: random.Random, origin: str, destination: str, day: str) -> list[dict[str, Any]]:
    """The flights from ``origin`` to ``destination`` on ``day``, made on first use (two or three, the first in
    the morning and the last in the evening)."""
    key = (origin, destination, day)
    if key not in world.flights:
        (x1, y1), (x2, y2) = world.coords[origin], world.coords[destination]
        miles = float(round(math.hypot(x2 - x1, y2 - y1) / 1.609))
        slots = [(6 * 60, 9 * 60 + 30), (11 * 60, 14 * 60), (16 * 60 + 30, 20 * 60)]
        if rng.random() < 0.5:
            slots = [slots[0], slots[2]]
        rows = []
        for start, end in slots:
            number = f"F{rng.randrange(3000000, 4999999):07d}"
            while number in world.flight_numbers:
                number = f"F{rng.randrange(3000000, 4999999):07d}"
            world.flight_numbers.add(number)
            departure = rng.randrange(start, end)
            elapsed = int(35 + miles / 7.5) + rng.randint(0, 20)
            rows.append({"Flight Number": number, "Price": int(55 + miles * 0.22 + rng.randint(0, 160)),
                         "DepTime": _clock(departure), "ArrTime": _clock(departure + elapsed),
                         "ActualElapsedTime": f"{elapsed // 60} hours {elapsed % 60} minutes", "FlightDate": day,
                         "OriginCityName": origin, "DestCityName": destination, "Distance": miles})
        world.flights[key] = rows
    return world.flights[key]


# --- queries and plans --------------------------------------------------------------------------------------------


@dataclass
class Leg:
    """One day's move: the plan's transportation text and its official cost."""

    text: str
    cost: float
    minutes: int


def _leg(world: World, rng: random.Random, mode: str, origin: str, destination: str, day: str, people: int,
         pick: str) -> Leg:
    if mode == "flight":
        options = _flights(world, rng, origin, destination, day)
        flight = options[0] if pick == "first" else options[-1]
        return Leg(f"Flight Number: {flight['Flight Number']}, from {origin} to {destination}, "
                   f"Departure Time: {flight['DepTime']}, Arrival Time: {flight['ArrTime']}",
                   flight["Price"] * people, _minutes(flight["ActualElapsedTime"]))
    duration, distance = world.distances[(origin, destination)]
    label = "Self-driving" if mode == "self-driving" else "Taxi"
    cost = drive_cost(distance, mode)
    cars = math.ceil(people / (5 if mode == "self-driving" else 4))
    return Leg(f"{label}, from {origin} to {destination}, duration: {duration}, distance: {distance}, cost: {cost}",
               cost * cars, _minutes(duration))


def _room_ok(row: dict[str, Any], constraint: dict[str, Any]) -> bool:
    room, rule = constraint["room type"], constraint["house rule"]
    if room is not None and row["room type"] not in ROOM_TYPES[room]:
        return False
    return rule is None or f"No {rule}" not in row["house_rules"]


def _stay_options(world: World, city: str, constraint: dict[str, Any], nights: int, people: int) -> list[tuple]:
    options = [(row["price"] * math.ceil(people / row["maximum occupancy"]), row["NAME"], row)
               for row in world.in_city(world.accommodations, city, "city")
               if row["minimum nights"] <= nights and _room_ok(row, constraint)]
    return sorted(options, key=lambda option: (option[0], option[1]))


def _feasible(world: World, cities: list[str], constraint: dict[str, Any], people: int) -> bool:
    return all(_stay_options(world, city, constraint, 2, people) for city in cities)


def _choose_constraint(rng: random.Random, level: str, slot: int) -> dict[str, Any]:
    constraint: dict[str, Any] = {"house rule": None, "cuisine": None, "room type": None, "transportation": None}
    if level == "easy":
        return constraint
    if level == "medium":
        kinds = [["house rule"], ["cuisine"], ["room type"]][slot % 3]
    else:
        kinds = [["house rule", "cuisine", "room type"], ["transportation", "house rule", "room type"],
                 ["transportation", "cuisine", "house rule"], ["transportation", "cuisine", "room type"]][slot % 4]
    for kind in kinds:
        if kind == "house rule":
            constraint[kind] = rng.choice(HOUSE_RULES)
        elif kind == "cuisine":
            constraint[kind] = sorted(rng.sample(CONSTRAINT_CUISINES, rng.randint(2, 4)),
                                      key=CONSTRAINT_CUISINES.index)
        elif kind == "room type":
            constraint[kind] = rng.choice(list(ROOM_TYPES))
        else:
            constraint[kind] = rng.choice(["no flight", "no self-driving"])
    return constraint


def _query_text(rng: random.Random, org: str, dest: str, days: int, cities: int, dates: list[date], people: int,
                budget: int, constraint: dict[str, Any]) -> str:
    start, end = _day_text(dates[0]), f"{_day_text(dates[-1])}, 2022"
    money = f"${budget:,}"
    who = "a single person" if people == 1 else f"a group of {people} people"
    if days == 3:
        text = rng.choice([
            (f"Please help me plan a trip from {org} to {dest} spanning 3 days from {start} to {end}. "
             f"The travel should be planned for {who} with a budget of {money}."),
            (f"Could you create a 3-day travel itinerary for {who} departing from {org} and heading to {dest} "
             f"from {start} to {end}, with a budget of {money}?"),
            (f"Can you help with a travel plan from {org} to {dest} for 3 days, from {start} to {end}? "
             f"The trip is for {who} and the budget is {money}."),
        ])
    else:
        text = rng.choice([
            (f"Could you assist in crafting a travel itinerary for a {days}-day trip for {who}, departing from {org} "
             f"and touring {cities} cities in {dest}? The travel dates should range from {start} to {end}, "
             f"and the entire travel budget is {money}."),
            (f"Please plan a {days}-day journey for {who} starting in {org} and visiting {cities} different cities "
             f"in {dest} from {start} to {end}. The budget for the whole trip is {money}."),
        ])
    sentences = []
    rule = constraint["house rule"]
    if rule is not None:
        sentences.append({"parties": "The accommodations must allow parties.",
                          "smoking": "The accommodations must allow smoking.",
                          "children under 10": "The accommodations must welcome children under 10.",
                          "pets": "The accommodations must allow pets.",
                          "visitors": "The accommodations must allow visitors."}[rule])
    room = constraint["room type"]
    if room is not None:
        sentences.append({"entire room": "We would prefer entire rooms.",
                          "private room": "We would prefer private rooms.",
                          "shared room": "Shared rooms are what we are looking for.",
                          "not shared room": "The rooms should not be shared rooms."}[room])
    if constraint["cuisine"]:
        sentences.append(f"The trip should include {_join_words(list(constraint['cuisine']))} cuisines.")
    transport = constraint["transportation"]
    if transport is not None:
        sentences.append({"no flight": "Please do not plan any flights.",
                          "no self-driving": "Self-driving is not an option for this trip."}[transport])
    return " ".join([text, *sentences])


def _pick_restaurants(world: World, rng: random.Random, needs: dict[str, int],
                      cuisines: list[str] | None) -> dict[str, list[dict[str, Any]]]:
    """``needs[city]`` distinct restaurants per city, together covering ``cuisines``."""
    for _ in range(200):
        chosen = {city: rng.sample(world.in_city(world.restaurants, city), count) for city, count in needs.items()}
        covered = {c for rows in chosen.values() for row in rows for c in (cuisines or []) if c in row["Cuisines"]}
        if len(covered) == len(cuisines or []):
            return chosen
    raise AssertionError(f"no restaurants cover {cuisines} in {list(needs)}")


def _build_query(world: World, rng: random.Random, idx: int, level: str, days: int, slot: int,
                 used_dests: list[str]) -> tuple[dict[str, Any], dict[str, Any]]:
    count = {3: 1, 5: 2, 7: 3}[days]
    people = 1 if level == "easy" else rng.randint(2, 8) if level == "medium" else rng.randint(1, 8)
    for _ in range(500):
        constraint = _choose_constraint(rng, level, slot)
        if days == 3:
            fresh = [c for states in DEST_STATES.values() for c in states if c not in used_dests]
            cities = [rng.choice(fresh or [c for states in DEST_STATES.values() for c in states])]
            dest = cities[0]
        else:
            dest = rng.choice([s for s, cs in DEST_STATES.items() if len(cs) >= count])
            cities = rng.sample(list(DEST_STATES[dest]), count)
        if _feasible(world, cities, constraint, people):
            break
    else:
        raise AssertionError(f"no feasible query for {level} {days}")
    used_dests.extend(cities)
    transport = constraint["transportation"]
    modes = {None: ["flight", "flight", "flight", "self-driving", "self-driving", "taxi"],
             "no flight": ["self-driving", "self-driving", "taxi"], "no self-driving": ["flight", "flight", "taxi"]}
    mode = rng.choice(modes[transport])
    origins = [c for cs in ORIGIN_STATES.values() for c in cs]
    if mode == "flight":
        org = rng.choice(origins)
    else:  # by road: one of the two nearest origins
        near = sorted(origins, key=lambda o: (_km_value(world.distances[(o, cities[0])][1]), o))
        org = rng.choice(near[:2])
    inner = mode if mode != "flight" else rng.choice(["flight", "taxi"])
    first = date(2022, 3, rng.randint(1, 31 - days + 1))
    dates = [first + timedelta(days=i) for i in range(days)]
    day_text = [d.isoformat() for d in dates]
    # Flights on offer: to every candidate city on the first day and back on the last (the reference plan only
    # uses some of them).
    candidates = cities if days == 3 else list(DEST_STATES[dest])
    for city in candidates:
        _flights(world, rng, org, city, day_text[0])
        _flights(world, rng, city, org, day_text[-1])

    # The legs first: after a long drive on the first day there is no time for lunch or sightseeing there.
    legs = [_leg(world, rng, mode if i == 0 else inner, org if i == 0 else cities[i - 1], city, day_text[2 * i],
                 people, "first") for i, city in enumerate(cities)]
    home = _leg(world, rng, mode, cities[-1], org, day_text[-1], people, "last")
    late = legs[0].minutes > 5 * 60
    # Meals: arrival day lunch + dinner, full day three meals, departure day breakfast (+ lunch on the way home).
    needs = {city: 6 for city in cities}
    needs[cities[-1]] += 1
    needs[cities[0]] -= late
    meals = _pick_restaurants(world, rng, needs, constraint["cuisine"])
    sights = {city: rng.sample(world.in_city(world.attractions, city),
                               3 + (city == cities[-1]) - (late and city == cities[0])) for city in cities}
    stays = {}
    for city in cities:
        options = _stay_options(world, city, constraint, 2, people)
        stays[city] = rng.choice(options[:3])

    def eat(city: str) -> str:
        row = meals[city].pop()
        return f"{row['Name']}, {city}"

    def see(city: str, n: int) -> str:
        return "".join(f"{sights[city].pop()['Name']}, {city};" for _ in range(n))

    plan, cost = [], 0.0
    for i, (city, leg) in enumerate(zip(cities, legs)):
        previous = org if i == 0 else cities[i - 1]
        stay = f"{stays[city][1]}, {city}"
        short = i == 0 and late
        plan.append({"days": 2 * i + 1, "current_city": f"from {previous} to {city}", "transportation": leg.text,
                     "breakfast": "-" if i == 0 else eat(previous), "attraction": "-" if short else see(city, 1),
                     "lunch": "-" if short else eat(city), "dinner": eat(city), "accommodation": stay})
        plan.append({"days": 2 * i + 2, "current_city": city, "transportation": "-", "breakfast": eat(city),
                     "attraction": see(city, 2), "lunch": eat(city), "dinner": eat(city), "accommodation": stay})
        cost += leg.cost + 2 * stays[city][0]
    last = cities[-1]
    plan.append({"days": days, "current_city": f"from {last} to {org}", "transportation": home.text,
                 "breakfast": eat(last), "attraction": see(last, 1), "lunch": eat(last), "dinner": "-",
                 "accommodation": "-"})
    cost += home.cost
    cost += sum(_meal_cost(world, day[key]) for day in plan for key in ("breakfast", "lunch", "dinner")) * people
    assert all(not rows for rows in meals.values()) and all(not rows for rows in sights.values())
    budget = int(math.ceil(cost * 1.1 / 100) * 100)
    text = _query_text(rng, org, dest, days, count, dates, people, budget, constraint)
    query = {"idx": idx, "org": org, "dest": dest, "days": days, "visiting_city_number": count, "date": day_text,
             "people_number": people, "local_constraint": constraint, "budget": budget, "query": text, "level": level}
    return query, {"idx": idx, "query": text, "plan": plan}


def _meal_cost(world: World, entry: str) -> int:
    if entry == "-":
        return 0
    name, city = entry.rsplit(", ", 1)
    return next(row["Average Cost"] for row in world.restaurants if row["Name"] == name and row["City"] == city)


def build() -> dict[str, str]:
    """Every file of the sample, as ``{path relative to the sample folder: text}``."""
    rng = random.Random(SEED)
    world = _build_world(rng)
    queries, plans, used_dests, slots = [], [], [], {"easy": 0, "medium": 0, "hard": 0}
    for idx, (level, days) in enumerate(QUERY_PLAN, 1):
        query, plan = _build_query(world, rng, idx, level, days, slots[level], used_dests)
        slots[level] += 1
        queries.append(query)
        plans.append(plan)
    flights = sorted((row for rows in world.flights.values() for row in rows),
                     key=lambda r: (r["FlightDate"], r["OriginCityName"], r["DestCityName"], r["DepTime"]))
    states = list(DEST_STATES) + list(ORIGIN_STATES)
    files = {
        "database/accommodations/clean_accommodations_2022.csv":
            _csv_text(ACCOMMODATION_HEADER, [[row[k] for k in ACCOMMODATION_HEADER] for row in world.accommodations]),
        "database/restaurants/clean_restaurant_2022.csv":
            _csv_text(RESTAURANT_HEADER, [[row[k] for k in RESTAURANT_HEADER] for row in world.restaurants]),
        "database/attractions/attractions.csv":
            _csv_text(ATTRACTION_HEADER, [[row[k] for k in ATTRACTION_HEADER] for row in world.attractions]),
        "database/googleDistanceMatrix/distance.csv":
            _csv_text(DISTANCE_HEADER, [[o, d, "", duration, distance]
                                        for (o, d), (duration, distance) in world.distances.items()]),
        "database/flights/clean_Flights_2022.csv":
            _csv_text(FLIGHT_HEADER, [[row[k] for k in FLIGHT_HEADER] for row in flights]),
        "database/background/citySet.txt": "\n".join(world.city_state),
        "database/background/citySet_with_states.txt":
            "\n".join(f"{city}\t{state}" for city, state in world.city_state.items()),
        "database/background/stateSet.txt": "\n".join(states),
        "queries.jsonl": "".join(json.dumps(q, ensure_ascii=False) + "\n" for q in queries),
        "reference_plans.jsonl": "".join(json.dumps(p, ensure_ascii=False) + "\n" for p in plans),
    }
    return files


def write_sample(sample_dir: Path = SAMPLE_DIR) -> dict[str, str]:
    """Write every file of the sample under ``sample_dir`` (its ``database/`` is replaced); returns ``build()``."""
    files = build()
    sample_dir = Path(sample_dir)
    sample_dir.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(dir=sample_dir) as scratch:
        for relative, text in files.items():
            path = Path(scratch) / relative
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_text(text, encoding="utf-8", newline="\n")
        if (sample_dir / "database").exists():
            shutil.rmtree(sample_dir / "database")
        (Path(scratch) / "database").replace(sample_dir / "database")
        for name in ("queries.jsonl", "reference_plans.jsonl"):
            (Path(scratch) / name).replace(sample_dir / name)
    return files


def main() -> None:
    files = write_sample()
    queries = files["queries.jsonl"].count("\n")
    print(f"wrote {len(files)} files ({queries} queries and their reference plans) under {SAMPLE_DIR}")


if __name__ == "__main__":
    main()
