"""SYNTHETIC SAMPLE, NOT REAL DATA: a small fictional world ("Velmora") for trying the search family offline.

Every name, place, date and fact below was invented for this project; nothing is copied from a real dataset. The
generator is deterministic (no randomness, pure Python) and writes two files next to ``tasks.py``:

- ``data/sample_questions.jsonl``: 60 questions in NQ-open's layout, ``{"question": str, "answer": [str, ...]}``,
  plus ``"id": "rlf-sample-NNN"`` and ``"data_source": "rlf-sample"`` so the sample is never mistaken for NQ. Some
  answers carry an alias (``["Mount Arvel", "Arvel"]``).
- ``data/sample_corpus.jsonl``: about 200 passages in Search-R1's wiki-18 layout, ``{"id": "0", "contents":
  "\\"Title\\"\\ntext"}``. Each article of the world gives one or two consecutive passages; the first repeats the
  title at the start of its text, as wiki-18 does.

Most questions (54 of 60) are answered by the title of an article whose passage shares the question's distinctive
words, so a baseline that answers with the title of BM25's top passage does well but not perfectly: six questions
ask for a number or a year, and some compete with a neighbouring article (who first climbed Mount Kestrin is told
in the mountain's article too, which BM25 ranks first; "who designed the Pellory Lighthouse" competes with the
article "Pellory Lighthouse"). Articles about other fictional entities share the vocabulary of every question (other mountains, towns,
ships, people), so retrieval is not trivial. With ``bm25s`` (English stopwords, PyStemmer) the answer's article is
the top hit for 53 of the 60 questions at Search-R1's k1=0.9, b=0.4, and for 51 at bm25s's defaults.

``python -m rlfactory_envs.search.sample_data`` rewrites both files; the committed files must equal its output.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path

__all__ = ["Article", "DATA_SOURCE", "QUESTIONS", "articles", "corpus_rows", "corpus_text", "main", "question_rows",
           "questions_text", "write_sample"]

DATA_SOURCE = "rlf-sample"
COUNTRY = "Velmora"


@dataclass(frozen=True)
class Article:
    """One encyclopedia article: a title and its passages (one or two), in order."""

    title: str
    passages: tuple[str, ...]


# --- The world -------------------------------------------------------------------------------------------------
# Tables first, then one template per kind of article. A trailing free-text field ("detail", "history") gives
# each entity a sentence of its own so that passages of one kind do not read alike.

# name, capital, highest mountain, detail
PROVINCES = [
    ("Quenmark", "Dunmere", "Mount Arvel",
     "It is a northern province of heather moorland, peat bogs and small fishing harbours."),
    ("Halvany", "Caddow", "Mount Kestrin",
     "Its river valleys are planted with orchards and vineyards, and its wine is sold across the islands."),
    ("Dorsel", "Wistrel", "Mount Tharn",
     "Tin and copper have been mined in its hills since the first settlers arrived."),
    ("Myrrow", "Orlanne", "Mount Oberlain",
     "Dense pine forests and more than forty lakes cover most of the province."),
    ("Tessaline", "Savenne", "Mount Velis",
     "Its southern coast is a maze of salt marshes, tidal creeks and salt pans."),
    ("Ombrecht", "Tolmach", "Mount Corrow",
     "The highland province borders the Sea of Orrin and is known for hardy sheep and long winters."),
]

# name, province, kind, founded, known for, detail
TOWNS = [
    ("Dunmere", "Quenmark", "city", 1122, "its cathedral of grey stone and its university",
     "Dunmere is the capital of the province of Quenmark and the seat of its provincial council."),
    ("Pellory", "Quenmark", "harbour town", 1306, "its herring fleet and the Lantern Tide festival",
     "Every spring the town hosts the Lantern Tide festival when its boats come home."),
    ("Caddow", "Halvany", "city", 1040, "its printing houses and the Royal Library",
     "Caddow is the capital of the province of Halvany; the River Wendrow runs through its old quarter."),
    ("Wistrel", "Dorsel", "walled town", 1215, "its tin market and the Ashfall Fair",
     "The walled town was besieged for nine months in 1671 and its walls still show the damage."),
    ("Orlanne", "Myrrow", "lake town", 1190, "its timber trade and its painted wooden houses",
     "Orlanne is the capital of Myrrow and stands on the northern shore of Lake Idony."),
    ("Savenne", "Tessaline", "city", 1088, "its salt trade and its sweet brennel cakes",
     "Savenne is the capital of Tessaline and the largest market for sea salt in the kingdom."),
    ("Tolmach", "Ombrecht", "market town", 1270, "its wool market and its smoked eel",
     "Tolmach is the capital of Ombrecht and holds a sheep market every Thursday."),
    ("Lomquay", "Tessaline", "harbour town", 1350, "its shipyards at the mouth of the River Tamsel",
     "The harbour town lies at the mouth of the River Tamsel, where its shipyards built most of the royal fleet."),
    ("Hennet", "Halvany", "market town", 1302, "its clockmakers and its covered market",
     "Clockmakers have worked in Hennet since the fifteenth century."),
    ("Varrowby", "Dorsel", "village", 1410, "its glass workshops and glassblowers",
     "Varrowby is known for its glass workshops, which use the white sand of the River Lusk."),
    ("Brisca", "Myrrow", "town", 1265, "its conservatory of music and its organ builders",
     "The town's conservatory of music has trained singers and composers since 1742."),
    ("Seskin", "Tessaline", "port town", 1198, "its oyster beds and its customs house",
     "The port town ships oysters to Caddow and Dunmere, packed in wet seaweed."),
    ("Fennock", "Halvany", "mill town", 1380, "its water mills and its engineering works",
     "Its water mills on the River Wendrow once ground the grain of half the province."),
    ("Murlow", "Myrrow", "village", 1432, "its botanical garden and its herb farms",
     "A botanical garden founded in Murlow in 1828 keeps plants from every island of the kingdom."),
    ("Ebberly", "Quenmark", "village", 1460, "its peat cutters and its writers",
     "Several novelists and poets have lived in the village for its quiet and its cheap rents."),
    ("Astrel", "Ombrecht", "mining town", 1522, "its dye works and its miners' chapel",
     "The mining town grew around a copper mine opened in 1522 and later around its dye works."),
    ("Quillon", "Quenmark", "coastal village", 1399, "its cliffs and its sea birds",
     "Balloonists have launched from the cliffs of Quillon because of the steady sea wind."),
    ("Gorrick", "Ombrecht", "fishing village", 1475, "its eel traps and its stone pier",
     "Fishermen of Gorrick set eel traps in the shallow bays of the Sea of Orrin."),
    ("Tovey", "Halvany", "village", 1444, "its cider orchards",
     "Cider from the orchards of Tovey is sent down the valley to Caddow every autumn."),
    ("Beldane", "Myrrow", "forest village", 1501, "its charcoal burners and its sawmill",
     "Charcoal burners have worked in the pine forests around Beldane for four hundred years."),
    ("Skelby", "Dorsel", "hill village", 1388, "its standing stones",
     "A ring of eleven standing stones stands on the hill above Skelby."),
]

# Second passages of the town articles: population and landmarks.
TOWN_HISTORY = {
    "Dunmere": "The cathedral was rebuilt after the fire of 1781, and the old bridge over the Tamsel is a landmark.",
    "Pellory": "The harbour is guarded by a lighthouse on the breakwater, and the fish market opens at dawn.",
    "Caddow": "The court of the kingdom sits in the palace of Caddow, beside the printing houses of the old quarter.",
    "Wistrel": "The town walls, the tin market hall and the garrison church are the main sights.",
    "Orlanne": "Timber from the forests of Myrrow is floated across the lake to the sawmills of the town.",
    "Savenne": "The salt pans south of the city cover more than two thousand hectares.",
    "Tolmach": "The wool hall of the town, built in 1620, is the largest timber building in the kingdom.",
    "Lomquay": "The shipyards closed in 1910, and the dry dock is now a museum of the royal fleet.",
    "Hennet": "The covered market, built in 1705, still holds a clock fair every May.",
    "Varrowby": "The glassblowers' furnaces burn day and night, and visitors may watch the work.",
    "Brisca": "The organ of the town church has four keyboards and was built by the local guild.",
    "Seskin": "The customs house on the quay dates from 1650 and the town hall from 1688.",
    "Fennock": "The engineering works of the town made iron for bridges, mills and steam engines.",
    "Murlow": "Herb farms around the village grow lavender, mint and marsh mallow for the apothecaries.",
    "Ebberly": "Peat is still cut on the moor above the village, and a small museum keeps the writers' desks.",
    "Astrel": "The blue dye of Astrel coloured the uniforms of the royal army for fifty years.",
    "Quillon": "The cliffs of Quillon are home to puffins, gannets and razorbills in the summer.",
    "Gorrick": "The stone pier of the village was built in 1712 after a storm destroyed the old wooden one.",
    "Tovey": "The cider press of the village is driven by a water wheel.",
    "Beldane": "A sawmill opened in the village in 1864 and still cuts pine for the boat builders.",
    "Skelby": "Tradition holds that the stones are eleven shepherds turned to stone for dancing on a holy day.",
}

# name, short name, province, height in metres, rock, what it overlooks, first ascent (person, year), detail
MOUNTAINS = [
    ("Mount Arvel", "Arvel", "Quenmark", 2914, "granite", "the harbour town of Pellory", ("Brannoch Tully", 1858),
     "Its summit is often hidden in sea fog, and the fishermen of the coast steer by its shadow."),
    ("Mount Kestrin", "Kestrin", "Halvany", 2480, "limestone", "the orchards of the Wendrow valley",
     ("Gideon Farrow", 1893), "Kestrin's limestone cliffs are riddled with caves where hermits once lived."),
    ("Mount Tharn", "Tharn", "Dorsel", 2655, "slate", "the mining country around Wistrel", ("Amadis Corl", 1866),
     "Old tin workings scar its lower slopes."),
    ("Mount Oberlain", "Oberlain", "Myrrow", 2302, "black basalt", "the still waters of Lake Vasher",
     ("Wenna Strake", 1879), "Its basalt columns rise in tall steps from the shore of the lake."),
    ("Mount Velis", "Velis", "Tessaline", 1820, "sandstone", "the salt marshes of Tessaline", ("Idris Mallet", 1871),
     "Velis is a lone red hill that rises straight out of the marshes."),
    ("Mount Corrow", "Corrow", "Ombrecht", 2733, "gneiss", "the narrow pass that links Ombrecht to Dorsel",
     ("Gideon Farrow", 1887), "The Corrow Pass below its southern face was the scene of a battle in 1689."),
    ("Mount Isbel", "Isbel", "Quenmark", 2210, "granite", "the moorland village of Ebberly", ("Brannoch Tully", 1861),
     "Shepherds drive their flocks across its lower slopes every summer."),
    ("Mount Drennan", "Drennan", "Halvany", 1975, "limestone", "the clockmakers' town of Hennet",
     ("Amadis Corl", 1870), "A chapel built by monks in 1310 stands on its eastern shoulder."),
    ("Mount Sallow", "Sallow", "Dorsel", 2120, "slate", "the glassblowers' village of Varrowby",
     ("Wenna Strake", 1875), "Slate from its quarries roofs most of the houses of Dorsel."),
    ("Mount Ferrith", "Ferrith", "Myrrow", 2390, "granite", "the pine forests north of Orlanne",
     ("Idris Mallet", 1869), "Ferrith is the source of the River Mirren, which runs south to Lake Idony."),
    ("Mount Quell", "Quell", "Tessaline", 1540, "sandstone", "the port town of Seskin", ("Brannoch Tully", 1852),
     "Its sandstone was cut for the town hall of Seskin."),
    ("Mount Yarrow", "Yarrow", "Ombrecht", 2560, "gneiss", "the copper mines of Astrel", ("Wenna Strake", 1883),
     "Its northern face holds snow well into summer."),
]

# name, source mountain, towns it flows through, mouth, length in km, detail
RIVERS = [
    ("River Tamsel", "Mount Arvel", ["Dunmere", "Lomquay"], "the Sea of Orrin", 312,
     "The Tamsel is the longest river in Velmora and was the kingdom's main road for timber and grain."),
    ("River Wendrow", "Mount Kestrin", ["Fennock", "Caddow"], "Gullmere Bay", 188,
     "The Halvany Bridge crosses the Wendrow at Caddow."),
    ("River Lusk", "Mount Tharn", ["Varrowby", "Wistrel"], "the Sea of Orrin", 146,
     "The white sand of its bed is prized by glassmakers."),
    ("River Mirren", "Mount Ferrith", ["Brisca", "Orlanne"], "Lake Idony", 97,
     "The Mirren is the main river flowing into Lake Idony."),
    ("River Ousel", "Mount Velis", ["Savenne"], "the salt marshes of Tessaline", 64,
     "The Ousel loses itself in the salt marshes before it reaches the sea."),
    ("River Brannock", "Mount Corrow", ["Tolmach", "Gorrick"], "the Sea of Orrin", 121,
     "Eels are caught at its mouth with wicker traps."),
    ("River Kelder", "Mount Isbel", ["Ebberly", "Quillon"], "the Sea of Orrin", 58,
     "Its brown water is stained by the peat of the Quenmark moors."),
    ("River Faelin", "Mount Yarrow", ["Astrel"], "Lake Senna", 73,
     "Waste from the dye works of Astrel once turned the Faelin blue."),
]

# name, kind, detail
WATERS = [
    ("Sea of Orrin", "sea",
     "The Sea of Orrin lies between Velmora and the northern islands. The Tamsel, the Lusk and the Brannock all "
     "flow into it, and its northern islands are home to seals and sea birds."),
    ("Lake Vasher", "lake",
     "Lake Vasher is a deep, cold lake at the foot of Mount Oberlain in Myrrow, fed by springs under the basalt."),
    ("Lake Idony", "lake",
     "Lake Idony is the largest lake of Myrrow; the city of Orlanne stands on its northern shore."),
    ("Gullmere Bay", "bay",
     "Gullmere Bay is a shallow bay on the coast of Halvany where the River Wendrow reaches the sea."),
    ("Lake Senna", "lake",
     "Lake Senna is a small upland lake in Ombrecht, fed by the River Faelin."),
]

# name, born, died, birthplace, profession, achievement (after the surname), detail
PEOPLE = [
    ("Idris Mallet", 1838, 1904, "Dunmere", "surveyor",
     "made the first ascent of Mount Velis in 1871 and mapped the salt marshes of Tessaline.",
     "His survey of the marshes was used by the salt works for a century."),
    ("Oska Brenn", 1802, 1869, "Hennet", "clockmaker",
     "invented the tide clock, which shows the state of the tide in a harbour.",
     "He trained forty apprentices in his workshop in Hennet."),
    ("Talia Verro", 1811, 1857, "Seskin", "poet",
     "wrote the poem cycle Songs of the Ousel, about the rivers of her childhood.",
     "She died of marsh fever at the age of forty-six."),
    ("Emund Crael", 1744, 1810, "Caddow", "architect",
     "designed the Pellory Lighthouse and rebuilt the cathedral of Dunmere after the fire of 1781.",
     "His drawings are kept in the Royal Library of Caddow."),
    ("Sabine Oltrey", 1752, 1821, "Orlanne", "astronomer",
     "founded the Dunmere Observatory and catalogued the comets of the northern sky.",
     "She was the first woman elected to the Velmoran Academy."),
    ("Corvin Ashgrove", 1790, 1848, "Lomquay", "explorer",
     "led the expedition that reached the island of Skerrin in 1824.",
     "He wrote an account of the voyage that sold out in a week."),
    ("Mirela Dask", 1820, 1889, "Savenne", "composer",
     "composed the opera The Salt Queen and studied music at the Brisca Conservatory.",
     "Her songs are still sung at weddings in Tessaline."),
    ("Hollis Penmarrow", 1770, 1839, "Lomquay", "shipbuilder",
     "launched the Marigold in 1821 and built the Grey Heron at the Lomquay shipyards.",
     "His yard employed three hundred carpenters."),
    ("Yveta Korr", 1832, 1901, "Brisca", "painter",
     "painted The Herring Fleet at Dawn, a view of the boats of Pellory.",
     "Her studio stood on the shore of Lake Idony."),
    ("Bastian Quill", 1701, 1766, "Tolmach", "cartographer",
     "compiled the Atlas of the Nine Coasts, the first complete set of sea charts of the kingdom.",
     "He measured the coast on foot over eleven summers."),
    ("Renna Alcott", 1848, 1922, "Fennock", "engineer",
     "built the Halvany Bridge across the River Wendrow, the first iron bridge in the kingdom.",
     "She also designed the water mills of Fennock."),
    ("Loric Vane", 1660, 1721, "Caddow", "statesman",
     "negotiated the Treaty of Seskin, which ended the War of the Salt Marshes.",
     "He served three monarchs as chancellor."),
    ("Ysolde Harn", 1652, 1718, "Wistrel", "general",
     "won the decisive victory of the highland revolt in 1689.",
     "She was the only woman to command the royal army."),
    ("Petra Sollen", 1795, 1860, "Murlow", "botanist",
     "described the ghost orchid, a pale flower that grows only on Mellion Isle.",
     "She founded the botanical garden of Murlow."),
    ("Daven Orsk", 1631, 1690, "Tolmach", "general",
     "commanded the royal army during the Siege of Wistrel.",
     "He was killed in a skirmish near Astrel."),
    ("Maud Ferrand", 1858, 1931, "Ebberly", "novelist",
     "wrote the novel The Salt Ledger, set among the salt workers of Tessaline.",
     "She published eleven novels under her own name and two under a pseudonym."),
    ("Kasimir Holt", 1712, 1779, "Caddow", "printer",
     "printed the Caddow Courant, the first newspaper in the kingdom.",
     "His press is on display in the Royal Library."),
    ("Elodie Marchbank", 1861, 1940, "Astrel", "chemist",
     "discovered the blue dye known as Astrel blue.",
     "She ran the laboratory of the Astrel dye works for thirty years."),
    ("Aurel Menck", 1730, 1795, "Varrowby", "glassmaker",
     "invented the glass harmonicon, an instrument of tuned glass bowls.",
     "His workshop in Varrowby made windows for the cathedral of Dunmere."),
    ("Nerys Calloway", 1866, 1919, "Quillon", "balloonist",
     "made the first balloon crossing of the Sea of Orrin in 1897.",
     "She launched from the cliffs of Quillon and landed on the Isle of Carrow."),
    ("Gideon Farrow", 1859, 1938, "Tolmach", "mountaineer",
     "made the first ascents of Mount Corrow and Mount Kestrin.",
     "He wrote a guide to the climbing routes of Ombrecht."),
    ("Odile Rask", 1880, 1951, "Murlow", "historian",
     "wrote the History of the Velmoran Provinces in six volumes.",
     "She taught history at the University of Dunmere."),
    ("Brannoch Tully", 1821, 1890, "Pellory", "shepherd and guide",
     "made the first ascents of Mount Arvel, Mount Quell and Mount Isbel.",
     "He guided surveyors across the moors for forty years."),
    ("Wenna Strake", 1840, 1911, "Orlanne", "geologist",
     "studied the basalt columns of Mount Oberlain and made its first ascent.",
     "Her collection of rocks is kept at the University of Dunmere."),
    ("Hester Vail", 1810, 1877, "Lomquay", "sea captain",
     "commanded paddle steamers on the northern routes for twenty years.",
     "She was the first woman licensed as a master mariner in the kingdom."),
    ("Jory Pask", 1799, 1840, "Gorrick", "sailor",
     "served as mate and later master on the salt and herring routes.",
     "He was lost at sea at the age of forty-one."),
    ("Tamsin Orde", 1751, 1818, "Seskin", "naval officer",
     "commanded the royal yacht and escorted the royal family between the islands.",
     "She retired to a house overlooking the harbour of Seskin."),
    ("Matthias Kell", 1783, 1850, "Savenne", "engineer",
     "invented the salt pump, which lifts brine from the marshes into the salt pans.",
     "His pumps were driven by windmills along the coast of Tessaline."),
    ("Fenwick Aubry", 1790, 1834, "Pellory", "poet",
     "wrote the Ballads of the Herring Coast.",
     "He drowned while sailing off the coast of Quenmark."),
    ("Amadis Corl", 1830, 1897, "Hennet", "priest and climber",
     "made the first ascents of Mount Tharn and Mount Drennan.",
     "He restored the monks' chapel on Mount Drennan."),
]

# title, kind, place, year, maker, detail
WORKS = [
    ("Tide clock", "instrument", "Hennet", 1834, "Oska Brenn",
     "It has a single hand that turns once every twelve hours and twenty-five minutes, showing high and low "
     "water in a harbour."),
    ("Glass harmonicon", "instrument", "Varrowby", 1761, "Aurel Menck",
     "It is played by touching tuned bowls with wet fingers; its sound is soft and ringing."),
    ("Pellory Lighthouse", "lighthouse", "Pellory", 1779, "Emund Crael",
     "The lighthouse stands on the breakwater of the harbour and its light can be seen thirty kilometres out to sea."),
    ("Halvany Bridge", "bridge", "Caddow", 1889, "Renna Alcott",
     "The iron bridge has three arches and carries the road from Caddow to Fennock over the River Wendrow."),
    ("The Salt Ledger", "novel", "Tessaline", 1897, "Maud Ferrand",
     "The novel follows a family of salt workers in the marshes of Tessaline over three generations."),
    ("The Salt Queen", "opera", "Savenne", 1861, "Mirela Dask",
     "The opera, first performed in Savenne, tells of a ruler of the marsh towns."),
    ("The Herring Fleet at Dawn", "painting", "Pellory", 1874, "Yveta Korr",
     "The painting shows the boats of Pellory leaving the harbour at first light."),
    ("Atlas of the Nine Coasts", "atlas", "Tolmach", 1749, "Bastian Quill",
     "The atlas has ninety sea charts and was used by the royal navy for a century."),
    ("Caddow Courant", "newspaper", "Caddow", 1738, "Kasimir Holt",
     "The newspaper appeared every Saturday and reported ship arrivals, prices and the news of the court."),
    ("Ghost orchid", "flower", "Mellion Isle", 1831, "Petra Sollen",
     "The ghost orchid has white, almost transparent petals and flowers only in damp shade."),
]

# name, kind, launched, builder, yard, captain, detail (the fate or fame of the ship)
SHIPS = [
    ("Grey Heron", "three-masted barque", 1819, "Hollis Penmarrow", "Lomquay", "Corvin Ashgrove",
     "The Grey Heron carried Corvin Ashgrove's expedition to the island of Skerrin in 1824. She sank in a storm "
     "off Quillon in 1846."),
    ("Marigold", "merchant brig", 1821, "Hollis Penmarrow", "Lomquay", "Ansel Brood",
     "The Marigold carried salt from Savenne to the northern islands for thirty years."),
    ("Sable Wren", "schooner", 1833, "Hollis Penmarrow", "Lomquay", "Jory Pask",
     "The Sable Wren was wrecked on Tarrant Rock in a winter gale in 1840; none of her crew survived."),
    ("Constant Tide", "paddle steamer", 1852, "Lomquay Iron Works", "Lomquay", "Hester Vail",
     "The Constant Tide made the first crossing of the Sea of Orrin under steam in 1853."),
    ("Vesper", "royal yacht", 1790, "Lomquay Royal Yard", "Lomquay", "Tamsin Orde",
     "The Vesper carried the royal family between the islands every summer."),
    ("Saltbinder", "salt barge", 1802, "Savenne Salt Company", "Savenne", "Ned Harrow",
     "The Saltbinder carried salt up the River Ousel and was broken up in 1851."),
]

# name, short name, detail
ISLANDS = [
    ("Skerrin", None,
     "Skerrin is a remote island in the far north of the Sea of Orrin. Corvin Ashgrove reached it aboard the Grey "
     "Heron in 1824 and found colonies of seals and no people."),
    ("Isle of Carrow", "Carrow",
     "The Isle of Carrow is the largest island in the Sea of Orrin and has a lighthouse, a harbour and a small town."),
    ("Mellion Isle", "Mellion",
     "Mellion Isle is a wooded island off Tessaline, home to the ghost orchid and to many sea birds."),
    ("Tarrant Rock", None,
     "Tarrant Rock is a bare reef at the entrance to Gullmere Bay where many ships have been wrecked."),
]

# name, town, season, what it celebrates / how
FESTIVALS = [
    ("Lantern Tide", "Pellory", "spring",
     "Lantern Tide celebrates the return of the herring fleet: paper lanterns are floated on the harbour at night."),
    ("Feast of Nine Bells", "Dunmere", "winter",
     "The feast marks the new year with the ringing of the nine bells of the cathedral at midnight."),
    ("Ashfall Fair", "Wistrel", "autumn",
     "The Ashfall Fair is held after the first snow, with a horse market and bonfires outside the walls."),
    ("Kite Moon", "Quillon", "summer",
     "Kite Moon is a night of kite flying on the cliffs, held at the full moon of midsummer."),
    ("Salt Procession", "Savenne", "summer",
     "In the Salt Procession the first salt of the year is carried through the streets to the cathedral."),
]

# name, short name, town, ingredients, detail
DISHES = [
    ("Brennel cake", "brennel", "Savenne", "honey and caraway",
     "Brennel cake is baked for weddings and for the Salt Procession."),
    ("Orrin chowder", None, "Gorrick", "cod, cream and leeks",
     "Orrin chowder is a thick fish soup eaten by the fishermen of the northern coast."),
    ("Eel and barley pot", None, "Tolmach", "smoked eel and barley",
     "The pot is cooked slowly in a clay dish and served on market days."),
    ("Moss bread", None, "Orlanne", "rye flour and dried moss",
     "Moss bread was eaten by forest workers through the long winters."),
]

# name, kind, town, founded, founder, detail
INSTITUTIONS = [
    ("University of Dunmere", "university", "Dunmere", 1311, "the Quenmark council",
     "The University of Dunmere is the oldest university in Velmora."),
    ("Royal Library of Caddow", "library", "Caddow", 1702, "Queen Maren",
     "The Royal Library of Caddow holds the archives of the kingdom; its reading room was designed by Emund Crael."),
    ("Dunmere Observatory", "observatory", "Dunmere", 1788, "Sabine Oltrey",
     "The observatory stands on a hill above the city and has a brass telescope eight metres long."),
    ("Brisca Conservatory", "conservatory of music", "Brisca", 1742, "the organ builders' guild",
     "The Brisca Conservatory trains singers, organists and composers; Mirela Dask studied music there."),
    ("Velmoran Academy", "academy of sciences", "Caddow", 1760, "the crown",
     "The academy publishes a yearly journal of natural philosophy."),
]

# name, year, place, winner, loser, detail
EVENTS = [
    ("Battle of Corrow Pass", 1689, "the Corrow Pass below Mount Corrow", "Ysolde Harn", "the Ombrecht rebels",
     "The royal army under Ysolde Harn defeated the Ombrecht rebels in a snowstorm, ending the highland revolt."),
    ("Siege of Wistrel", 1671, "Wistrel", "Daven Orsk", "the rebel garrison",
     "The walled town of Wistrel was besieged for nine months until its garrison surrendered to Daven Orsk."),
    ("Treaty of Seskin", 1702, "Seskin", "Loric Vane", "the salt towns",
     "The Treaty of Seskin was signed in the town hall of Seskin and ended the War of the Salt Marshes."),
    ("War of the Salt Marshes", 1694, "Tessaline", "the crown", "the salt towns",
     "The salt towns of Tessaline fought the crown over the salt tax for eight years."),
]

# name, reign start, reign end, successor, detail
MONARCHS = [
    ("Queen Ismay I", 1598, 1631, "King Aldric II", "She moved the court from Dunmere to Caddow."),
    ("King Aldric II", 1631, 1668, "Queen Maren", "He raised the tin tax that led to the rebellion in Dorsel."),
    ("Queen Maren", 1668, 1712, "King Oswin", "Her reign saw the highland revolt and the war over the salt tax."),
    ("King Oswin", 1712, 1749, "Queen Ysabet", "He granted Caddow its charter as a free city."),
    ("Queen Ysabet", 1749, 1788, "King Corentin", "She founded the Velmoran Academy in 1760."),
    ("King Corentin", 1788, 1823, "Queen Liss", "He ruled through the great famine of 1816."),
]

# The questions: (question in NQ-open style, accepted answers). The first answer is the title of the article that
# answers it, except for the six questions asking for a number or a year.
QUESTIONS: list[tuple[str, list[str]]] = [
    # mountains
    ("which mountain overlooks the harbour town of pellory", ["Mount Arvel", "Arvel"]),
    ("what is the highest mountain in the province of dorsel", ["Mount Tharn", "Tharn"]),
    ("which basalt mountain overlooks lake vasher", ["Mount Oberlain", "Oberlain"]),
    ("which red sandstone hill rises out of the salt marshes of tessaline", ["Mount Velis", "Velis"]),
    ("which mountain has limestone caves where hermits once lived", ["Mount Kestrin", "Kestrin"]),
    ("on which mountain did monks build a chapel in 1310", ["Mount Drennan", "Drennan"]),
    ("which mountain's quarries supply the slate roofs of dorsel", ["Mount Sallow", "Sallow"]),
    ("what mountain overlooks the copper mines of astrel", ["Mount Yarrow", "Yarrow"]),
    # rivers and waters
    ("what is the longest river in velmora", ["River Tamsel", "Tamsel"]),
    ("which river's white sand is prized by glassmakers", ["River Lusk", "Lusk"]),
    ("what river flows from mount ferrith into lake idony", ["River Mirren", "Mirren"]),
    ("which river is stained brown by the peat of the quenmark moors", ["River Kelder", "Kelder"]),
    ("which river was turned blue by waste from the astrel dye works", ["River Faelin", "Faelin"]),
    ("which deep cold lake in myrrow is fed by springs under the basalt", ["Lake Vasher", "Vasher"]),
    ("which bay on the coast of halvany does the river wendrow flow into", ["Gullmere Bay", "Gullmere"]),
    # towns
    ("what is the capital of the province of quenmark", ["Dunmere"]),
    ("what is the capital of tessaline", ["Savenne"]),
    ("which harbour town lies at the mouth of the river tamsel", ["Lomquay"]),
    ("which village in dorsel is known for its glass workshops", ["Varrowby"]),
    ("which town's conservatory has trained singers and composers since 1742", ["Brisca"]),
    ("where did fishermen set eel traps in the shallow bays of the sea of orrin", ["Gorrick"]),
    ("which lake town is famous for its painted wooden houses", ["Orlanne"]),
    ("which village attracted novelists and poets with its quiet and cheap rents", ["Ebberly"]),
    # people
    ("who invented the tide clock", ["Oska Brenn"]),
    ("who designed the pellory lighthouse", ["Emund Crael"]),
    ("which astronomer catalogued the comets of the northern sky", ["Sabine Oltrey"]),
    ("who wrote the novel the salt ledger", ["Maud Ferrand"]),
    ("who built the first iron bridge in the kingdom across the river wendrow", ["Renna Alcott"]),
    ("who composed the opera the salt queen", ["Mirela Dask"]),
    ("who made the first balloon crossing of the sea of orrin", ["Nerys Calloway"]),
    ("who made the first ascent of mount kestrin", ["Gideon Farrow"]),
    ("who invented the glass harmonicon", ["Aurel Menck"]),
    ("who negotiated the treaty that ended the war of the salt marshes", ["Loric Vane"]),
    ("who printed the first newspaper in the kingdom", ["Kasimir Holt"]),
    ("which botanist described the ghost orchid", ["Petra Sollen"]),
    ("which cartographer measured the coast on foot over eleven summers", ["Bastian Quill"]),
    ("which chemist discovered the blue dye known as astrel blue", ["Elodie Marchbank"]),
    ("who was the only woman to command the royal army", ["Ysolde Harn"]),
    ("which historian wrote the history of the velmoran provinces in six volumes", ["Odile Rask"]),
    ("which geologist studied the basalt columns of mount oberlain", ["Wenna Strake"]),
    ("which poet wrote the songs of the ousel", ["Talia Verro"]),
    # ships and islands
    ("which three-masted barque carried corvin ashgrove to skerrin", ["Grey Heron", "The Grey Heron"]),
    ("which schooner was wrecked in a winter gale in 1840", ["Sable Wren", "The Sable Wren"]),
    ("which paddle steamer made the first crossing of the sea of orrin under steam", ["Constant Tide"]),
    ("which ship carried salt from savenne to the northern islands for thirty years", ["Marigold"]),
    ("what is the largest island in the sea of orrin", ["Isle of Carrow", "Carrow"]),
    ("which wooded island off tessaline is home to the ghost orchid", ["Mellion Isle", "Mellion"]),
    # festivals, food, institutions, events
    ("what festival celebrates the return of the herring fleet with paper lanterns", ["Lantern Tide"]),
    ("which fair in wistrel is held after the first snow", ["Ashfall Fair"]),
    ("what cake from savenne is made with honey and caraway", ["Brennel cake", "Brennel"]),
    ("what is the oldest university in velmora", ["University of Dunmere", "Dunmere University"]),
    ("in which battle did ysolde harn defeat the ombrecht rebels", ["Battle of Corrow Pass", "Corrow Pass"]),
    ("which treaty was signed in the town hall of seskin", ["Treaty of Seskin"]),
    ("which library holds the archives of the kingdom of velmora", ["Royal Library of Caddow"]),
    # numbers and years: no article is titled with the answer
    ("how high is mount arvel", ["2,914 metres", "2914 m"]),
    ("in what year was the dunmere observatory founded", ["1788"]),
    ("how long is the river tamsel", ["312 kilometres", "312 km"]),
    ("when did the grey heron sink", ["1846"]),
    ("in what year was the treaty of seskin signed", ["1702"]),
    ("when was mount kestrin first climbed", ["1893"]),
]


# --- Articles ----------------------------------------------------------------------------------------------------

def _surname(name: str) -> str:
    return name.split()[-1]


def _join(items: list[str]) -> str:
    return items[0] if len(items) == 1 else ", ".join(items[:-1]) + " and " + items[-1]


def _province_articles() -> Iterable[Article]:
    for name, capital, highest, detail in PROVINCES:
        yield Article(name, (
            f"{name} is one of the six provinces of {COUNTRY}. {detail} Its council meets in {capital}, its largest "
            f"town.",
            f"The highest point of {name} is {highest}. The province sends four members to the royal assembly and "
            f"keeps its own court of law.",
        ))


def _population(name: str, kind: str) -> int:
    """A fixed, made-up census figure (larger for cities), derived from the name so it never changes."""
    base = int(hashlib.sha256(name.encode("utf-8")).hexdigest()[:6], 16)
    return 40_000 + base % 60_000 if kind == "city" else 800 + base % 9_000


def _town_articles() -> Iterable[Article]:
    for name, province, kind, founded, known_for, detail in TOWNS:
        yield Article(name, (
            f"{name} is a {kind} in the province of {province}, {COUNTRY}. It was founded in {founded} and is known "
            f"for {known_for}. {detail}",
            f"{name} had {_population(name, kind):,} inhabitants at the census of 1901. {TOWN_HISTORY[name]}",
        ))


def _mountain_articles() -> Iterable[Article]:
    highest = {mountain: province for province, _, mountain, _ in PROVINCES}
    for name, short, province, height, rock, overlooks, (climber, year), detail in MOUNTAINS:
        rank = (f"the highest mountain in the province of {province}" if name in highest
                else f"one of the peaks of {province}")
        yield Article(name, (
            f"{name} is a {rock} mountain in the province of {province}, {COUNTRY}. At {height:,} metres it is "
            f"{rank}. The mountain overlooks {overlooks}. {detail}",
            f"The first recorded ascent of {short} was made in {year} by {climber}, who reached the summit in a "
            f"single day from the valley.",
        ))


def _river_articles() -> Iterable[Article]:
    for name, source, towns, mouth, length, detail in RIVERS:
        yield Article(name, (
            f"The {name} is a river of {COUNTRY}, {length} kilometres long. It rises on the slopes of {source} and "
            f"flows past {_join(towns)} before it reaches {mouth}. {detail}",
        ))


def _water_articles() -> Iterable[Article]:
    for name, _kind, detail in WATERS:
        yield Article(name, (detail,))


def _person_articles() -> Iterable[Article]:
    for name, born, died, birthplace, profession, achievement, detail in PEOPLE:
        yield Article(name, (
            f"{name} ({born}–{died}) was a Velmoran {profession} born in {birthplace}. {_surname(name)} "
            f"{achievement}",
            f"{detail} A street in {birthplace} is named after the {profession}.",
        ))


def _work_articles() -> Iterable[Article]:
    for title, kind, place, year, maker, detail in WORKS:
        yield Article(title, (f"{detail} Kind: {kind}. Origin: {place}, {year}. Credited to: {maker}.",))


def _ship_articles() -> Iterable[Article]:
    for name, kind, launched, builder, yard, captain, detail in SHIPS:
        yield Article(name, (
            f"The {name} was a {kind} built by {builder} at {yard} and launched in {launched}. Her first captain "
            f"was {captain}. {detail}",
        ))


def _island_articles() -> Iterable[Article]:
    for name, _short, detail in ISLANDS:
        yield Article(name, (detail,))


def _festival_articles() -> Iterable[Article]:
    for name, town, season, detail in FESTIVALS:
        yield Article(name, (f"{name} is a festival held in {town} every {season}. {detail}",))


def _dish_articles() -> Iterable[Article]:
    for name, _short, town, ingredients, detail in DISHES:
        yield Article(name, (f"{name} is a dish from {town} made with {ingredients}. {detail}",))


def _institution_articles() -> Iterable[Article]:
    for name, kind, town, founded, founder, detail in INSTITUTIONS:
        yield Article(name, (f"The {name} is a {kind} in {town}, founded in {founded} by {founder}. {detail}",))


def _event_articles() -> Iterable[Article]:
    for name, year, place, winner, loser, detail in EVENTS:
        yield Article(name, (f"The {name} took place at {place} in {year} between {winner} and {loser}. {detail}",))


def _monarch_articles() -> Iterable[Article]:
    for name, start, end, successor, detail in MONARCHS:
        title, given = name.split()[0].lower(), name.split()[1]
        yield Article(name, (
            f"{name} was the {title} of {COUNTRY} from {start} to {end}. {detail}",
            f"{given} was buried in the cathedral of Dunmere, and the crown passed to {successor} in {end}.",
        ))


def _country_articles() -> Iterable[Article]:
    provinces = _join([province for province, *_ in PROVINCES])
    yield Article(COUNTRY, (
        f"{COUNTRY} is an island kingdom in the Sea of Orrin. It is divided into six provinces: {provinces}. Its "
        f"capital is Caddow, the seat of the court and of the Velmoran Academy.",
        f"The economy of {COUNTRY} rests on fishing, salt, wool, tin and timber, carried by its rivers and by a "
        f"fleet of coastal ships.",
    ))


def articles() -> list[Article]:
    """Every article of the sample world, in a fixed order that mixes the kinds of article."""
    makers = (_country_articles, _province_articles, _town_articles, _mountain_articles, _river_articles,
              _water_articles, _person_articles, _work_articles, _ship_articles, _island_articles,
              _festival_articles, _dish_articles, _institution_articles, _event_articles, _monarch_articles)
    found = [article for make in makers for article in make()]
    # A fixed pseudo-shuffle (by hash of the title), so neighbouring passages are not all of one kind.
    return sorted(found, key=lambda article: hashlib.sha256(article.title.encode("utf-8")).hexdigest())


def corpus_rows() -> list[dict[str, str]]:
    """The passages in wiki-18 layout, ids ``"0"``, ``"1"``, ... in file order."""
    rows: list[dict[str, str]] = []
    for article in articles():
        for number, text in enumerate(article.passages):
            # wiki-18 repeats the title at the start of an article's first passage.
            body = f"{article.title} {text}" if number == 0 else text
            rows.append({"id": str(len(rows)), "contents": f'"{article.title}"\n{body}'})
    return rows


def question_rows() -> list[dict[str, object]]:
    """The questions in NQ-open layout, with an ``id`` and ``data_source`` marking them as the synthetic sample."""
    return [{"id": f"{DATA_SOURCE}-{number:03d}", "question": question, "answer": list(answers),
             "data_source": DATA_SOURCE}
            for number, (question, answers) in enumerate(QUESTIONS)]


def _jsonl(rows: list[dict[str, object]]) -> str:
    return "".join(json.dumps(row, ensure_ascii=False) + "\n" for row in rows)


def questions_text() -> str:
    """The exact text of ``data/sample_questions.jsonl``."""
    return _jsonl(question_rows())


def corpus_text() -> str:
    """The exact text of ``data/sample_corpus.jsonl``."""
    return _jsonl(corpus_rows())


def write_sample(questions_path: Path, corpus_path: Path) -> None:
    """Write the questions and the corpus (UTF-8, one JSON object a line, ``\\n`` line ends)."""
    questions_path.parent.mkdir(parents=True, exist_ok=True)
    corpus_path.parent.mkdir(parents=True, exist_ok=True)
    questions_path.write_text(questions_text(), encoding="utf-8", newline="\n")
    corpus_path.write_text(corpus_text(), encoding="utf-8", newline="\n")


def main() -> None:
    """Rewrite the sample files inside the package."""
    from rlfactory_envs.search.tasks import SAMPLE_CORPUS_PATH, SAMPLE_QUESTIONS_PATH

    write_sample(SAMPLE_QUESTIONS_PATH, SAMPLE_CORPUS_PATH)
    print(f"wrote {len(QUESTIONS)} questions to {SAMPLE_QUESTIONS_PATH}")
    print(f"wrote {len(corpus_rows())} passages to {SAMPLE_CORPUS_PATH}")


if __name__ == "__main__":
    main()
