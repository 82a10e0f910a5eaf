"""Pools the templates draw names, phone numbers and words from."""

FIRST_NAMES = ("Alice", "Bruno", "Chen", "Dana", "Elif", "Farah", "Goran", "Hana", "Ivan", "Jamal", "Keiko", "Lars",
               "Maya", "Nikhil", "Olga", "Pedro", "Quinn", "Rosa", "Samir", "Tara", "Umar", "Vera", "Wen", "Yusuf",
               "Zoe", "Aiko", "Bianca", "Dmitri", "Esther", "Felix")
LAST_NAMES = ("Abbott", "Brennan", "Castillo", "Dubois", "Eriksen", "Fischer", "Garcia", "Haddad", "Ito", "Jensen",
              "Kowalski", "Larsen", "Moreau", "Nakamura", "Okafor", "Patel", "Quist", "Rossi", "Schmidt", "Tanaka",
              "Ueda", "Varga", "Weber", "Xu", "Yilmaz", "Zhang")
WORDS = ("apple", "river", "orbit", "maple", "violet", "harbor", "lantern", "meadow", "pepper", "summit", "cobalt",
         "falcon", "garnet", "juniper", "kettle", "marble", "nectar", "pebble", "quartz", "saffron", "thistle",
         "walnut", "zephyr", "amber", "birch", "cedar", "delta", "ember")


def phone_number(rng) -> str:
    """A US-style number, ``+1555xxxxxxx`` (AndroidWorld's contacts use this form)."""
    return "+1555" + "".join(str(rng.randrange(10)) for _ in range(7))
