"""SYNTHETIC SAMPLE, NOT REAL DATA: three small SQLite databases and questions for trying the NL2SQL family offline.

Every name and number below was invented for this project (a bookshop, a school and a tram network of the
fictional country of Velmora); nothing is copied from Spider or BIRD. The generator is deterministic (values come
from arithmetic on row numbers, no randomness) and writes, next to ``tasks.py``:

- ``data/database/<db_id>/<db_id>.sqlite``: the databases, in Spider's layout;
- ``data/questions.json``: the questions in Spider's row layout (``db_id``, ``question``, ``query``) plus BIRD's
  ``evidence`` (a hint the BIRD prompt shows), so both ids run on the sample.

The questions cover what the comparison has to get right: joins, GROUP BY, ORDER BY (row order counts),
DISTINCT, NULLs, aggregates over REAL columns. ``python -m rlfactory_envs.sql.sample_data`` rewrites the files; a
test checks that the committed databases hold exactly what the generator writes.
"""

from __future__ import annotations

import json
import sqlite3
import tempfile
from pathlib import Path
from typing import Any

__all__ = ["DATA_DIR", "QUESTIONS", "build_database", "main", "schemas", "write_sample"]

DATA_DIR = Path(__file__).resolve().parent / "data"

AUTHORS = [("Idris Mallet", "Velmora", 1938), ("Talia Verro", "Velmora", 1951), ("Oska Brenn", "Quellen", 1944),
           ("Maud Ferrand", "Velmora", 1966), ("Corvin Ashgrove", "Tarsk", 1972), ("Petra Sollen", "Quellen", 1980),
           ("Nerys Calloway", "Tarsk", 1959)]
GENRES = ["novel", "poetry", "history", "travel", "science"]
BOOK_WORDS = ["Salt", "Harbour", "Lantern", "Ledger", "Orchard", "Tide", "Granite", "Heron", "Marsh", "Comet",
              "Bridge", "Winter"]
STORES = ["Dunmere", "Caddow", "Savenne"]
STUDENT_FIRST = ["Ada", "Bram", "Cleo", "Dov", "Esme", "Finn", "Greta", "Hal", "Ines", "Jory", "Kit", "Lena",
                 "Milo", "Nell", "Otto", "Pia", "Quin", "Rosa"]
CITIES = ["Dunmere", "Caddow", "Orlanne", "Savenne"]
COURSES = [("Algebra", "Mathematics", 5), ("Geometry", "Mathematics", 4), ("Chemistry", "Science", 5),
           ("Biology", "Science", 4), ("History of Velmora", "Humanities", 3), ("Poetry", "Humanities", 3),
           ("Drawing", "Arts", 2)]
LINES = [("Red", "red"), ("Harbour", "blue"), ("Orchard", "green"), ("Night", "black")]
STATIONS = ["Cathedral", "University", "Fish Market", "Lighthouse", "Old Bridge", "Salt Pans", "Clock Tower",
            "Observatory", "Mill Lane", "Royal Library", "Glassworks", "North Gate", "Harbour Steps", "Lake Shore"]


def _bookshop(db: sqlite3.Connection) -> None:
    db.executescript("""
        CREATE TABLE authors (author_id INTEGER PRIMARY KEY, name TEXT NOT NULL, country TEXT NOT NULL,
                              birth_year INTEGER);
        CREATE TABLE books (book_id INTEGER PRIMARY KEY, title TEXT NOT NULL,
                            author_id INTEGER NOT NULL REFERENCES authors(author_id), genre TEXT NOT NULL,
                            year INTEGER NOT NULL, price REAL NOT NULL, pages INTEGER);
        CREATE TABLE sales (sale_id INTEGER PRIMARY KEY, book_id INTEGER NOT NULL REFERENCES books(book_id),
                            store TEXT NOT NULL, quantity INTEGER NOT NULL, sale_date TEXT NOT NULL);
    """)
    db.executemany("INSERT INTO authors VALUES (?, ?, ?, ?)",
                   [(i + 1, name, country, year) for i, (name, country, year) in enumerate(AUTHORS)])
    books = []
    for i in range(24):
        title = f"The {BOOK_WORDS[i % 12]} {['Road', 'Song', 'Keeper', 'Years'][i // 6]}"
        author = i % 6 + 1  # the seventh author has written no book
        pages = None if i % 11 == 5 else 120 + (i * 37) % 380
        price = round(8.5 + (i * 13) % 40 / 2, 2)
        books.append((i + 1, title, author, GENRES[(i * 3) % 5], 1990 + (i * 7) % 33, price, pages))
    db.executemany("INSERT INTO books VALUES (?, ?, ?, ?, ?, ?, ?)", books)
    sales = [(i + 1, (i * 5) % 20 + 1, STORES[i % 3], 1 + (i * 7) % 5,
              f"2023-{(i % 12) + 1:02d}-{(i * 3) % 28 + 1:02d}") for i in range(60)]
    db.executemany("INSERT INTO sales VALUES (?, ?, ?, ?, ?)", sales)


def _school(db: sqlite3.Connection) -> None:
    db.executescript("""
        CREATE TABLE students (student_id INTEGER PRIMARY KEY, name TEXT NOT NULL, grade INTEGER NOT NULL,
                               city TEXT NOT NULL, email TEXT);
        CREATE TABLE courses (course_id INTEGER PRIMARY KEY, title TEXT NOT NULL, department TEXT NOT NULL,
                              credits INTEGER NOT NULL);
        CREATE TABLE enrollments (student_id INTEGER NOT NULL REFERENCES students(student_id),
                                  course_id INTEGER NOT NULL REFERENCES courses(course_id),
                                  term TEXT NOT NULL, score REAL,
                                  PRIMARY KEY (student_id, course_id, term));
    """)
    students = [(i + 1, f"{first} {['Tully', 'Strake', 'Korr', 'Vane', 'Quill', 'Harn'][i % 6]}", 9 + i % 4,
                 CITIES[(i * 3) % 4], None if i % 5 == 2 else f"{first.lower()}{i + 1}@school.vm")
                for i, first in enumerate(STUDENT_FIRST)]
    db.executemany("INSERT INTO students VALUES (?, ?, ?, ?, ?)", students)
    db.executemany("INSERT INTO courses VALUES (?, ?, ?, ?)",
                   [(i + 1, title, dept, credits) for i, (title, dept, credits) in enumerate(COURSES)])
    enrollments = []
    for s in range(len(STUDENT_FIRST)):
        for c in range(len(COURSES) - 1):  # nobody takes Drawing
            if (s + 2 * c) % 3 == 0:
                score = None if (s + c) % 7 == 3 else float(55 + (s * 11 + c * 17) % 45)
                enrollments.append((s + 1, c + 1, "2024-spring" if (s + c) % 2 else "2023-autumn", score))
    db.executemany("INSERT INTO enrollments VALUES (?, ?, ?, ?)", enrollments)


def _tramways(db: sqlite3.Connection) -> None:
    db.executescript("""
        CREATE TABLE lines (line_id INTEGER PRIMARY KEY, name TEXT NOT NULL, color TEXT NOT NULL,
                            opened_year INTEGER NOT NULL);
        CREATE TABLE stations (station_id INTEGER PRIMARY KEY, name TEXT NOT NULL, zone INTEGER NOT NULL,
                               step_free INTEGER NOT NULL);
        CREATE TABLE stops (line_id INTEGER NOT NULL REFERENCES lines(line_id),
                            station_id INTEGER NOT NULL REFERENCES stations(station_id),
                            stop_order INTEGER NOT NULL, PRIMARY KEY (line_id, stop_order));
        CREATE TABLE ridership (station_id INTEGER NOT NULL REFERENCES stations(station_id),
                                month TEXT NOT NULL, riders INTEGER NOT NULL, PRIMARY KEY (station_id, month));
    """)
    db.executemany("INSERT INTO lines VALUES (?, ?, ?, ?)",
                   [(i + 1, name, color, 1901 + i * 17) for i, (name, color) in enumerate(LINES)])
    db.executemany("INSERT INTO stations VALUES (?, ?, ?, ?)",
                   [(i + 1, name, 1 + i % 3, int(i % 4 != 1)) for i, name in enumerate(STATIONS)])
    stops = []
    for line in range(len(LINES)):
        length = 5 + line
        for order in range(length):
            stops.append((line + 1, (line * 3 + order * (line + 1)) % len(STATIONS) + 1, order + 1))
    db.executemany("INSERT INTO stops VALUES (?, ?, ?)", stops)
    db.executemany("INSERT INTO ridership VALUES (?, ?, ?)",
                   [(s + 1, f"2024-{m:02d}", 1000 + (s * 733 + m * 191) % 4000)
                    for s in range(len(STATIONS)) for m in (1, 2, 3)])


BUILDERS = {"bookshop": _bookshop, "school": _school, "tramways": _tramways}

# db_id, question, gold query, evidence (BIRD-style hint)
QUESTIONS: list[tuple[str, str, str, str]] = [
    ("bookshop", "How many books does the shop sell?", "SELECT count(*) FROM books", ""),
    ("bookshop", "List the names of the authors born after 1960, youngest first.",
     "SELECT name FROM authors WHERE birth_year > 1960 ORDER BY birth_year DESC",
     "born after 1960 refers to birth_year > 1960; youngest first means ordered by birth_year descending"),
    ("bookshop", "What is the average price of the novels?",
     "SELECT avg(price) FROM books WHERE genre = 'novel'", "novels are books whose genre is 'novel'"),
    ("bookshop", "Which genres does the shop carry?", "SELECT DISTINCT genre FROM books", ""),
    ("bookshop", "For each author, how many books have they written? Give the author's name and the count.",
     "SELECT T1.name, count(*) FROM authors AS T1 JOIN books AS T2 ON T1.author_id = T2.author_id "
     "GROUP BY T1.author_id", ""),
    ("bookshop", "Which authors have not written any book?",
     "SELECT name FROM authors WHERE author_id NOT IN (SELECT author_id FROM books)", ""),
    ("bookshop", "What are the titles of the books whose page count is unknown?",
     "SELECT title FROM books WHERE pages IS NULL", "an unknown page count is a NULL pages value"),
    ("bookshop", "How many copies were sold in the Caddow store in total?",
     "SELECT sum(quantity) FROM sales WHERE store = 'Caddow'", "copies sold refers to the sum of quantity"),
    ("bookshop", "Give the titles and prices of the three most expensive books.",
     "SELECT title, price FROM books ORDER BY price DESC, book_id LIMIT 3", ""),
    ("school", "How many students live in Orlanne?", "SELECT count(*) FROM students WHERE city = 'Orlanne'", ""),
    ("school", "List the names of the students without an email address.",
     "SELECT name FROM students WHERE email IS NULL", "without an email address means email IS NULL"),
    ("school", "Which courses does nobody take?",
     "SELECT title FROM courses WHERE course_id NOT IN (SELECT course_id FROM enrollments)", ""),
    ("school", "What is the highest score recorded in Chemistry?",
     "SELECT max(T2.score) FROM courses AS T1 JOIN enrollments AS T2 ON T1.course_id = T2.course_id "
     "WHERE T1.title = 'Chemistry'", ""),
    ("school", "How many students are in each grade? List the grade and the number of students, by grade.",
     "SELECT grade, count(*) FROM students GROUP BY grade ORDER BY grade", ""),
    ("school", "How many different students are enrolled in at least one course?",
     "SELECT count(DISTINCT student_id) FROM enrollments", ""),
    ("school", "Which departments offer courses worth more than 3 credits?",
     "SELECT DISTINCT department FROM courses WHERE credits > 3", ""),
    ("school", "How many enrollments have no score yet?", "SELECT count(*) FROM enrollments WHERE score IS NULL",
     "no score yet means score IS NULL"),
    ("school", "What is the average score of the students from Dunmere?",
     "SELECT avg(T2.score) FROM students AS T1 JOIN enrollments AS T2 ON T1.student_id = T2.student_id "
     "WHERE T1.city = 'Dunmere'", ""),
    ("tramways", "How many stations are in zone 1?", "SELECT count(*) FROM stations WHERE zone = 1", ""),
    ("tramways", "List the stops of the Red line in order.",
     "SELECT T3.name FROM lines AS T1 JOIN stops AS T2 ON T1.line_id = T2.line_id "
     "JOIN stations AS T3 ON T2.station_id = T3.station_id WHERE T1.name = 'Red' ORDER BY T2.stop_order",
     "in order means ordered by stop_order"),
    ("tramways", "Which line opened first?", "SELECT name FROM lines ORDER BY opened_year LIMIT 1", ""),
    ("tramways", "How many lines stop at each station? Give the station name and the number of lines.",
     "SELECT T1.name, count(DISTINCT T2.line_id) FROM stations AS T1 JOIN stops AS T2 "
     "ON T1.station_id = T2.station_id GROUP BY T1.station_id", ""),
    ("tramways", "Which stations are not step-free?", "SELECT name FROM stations WHERE step_free = 0",
     "not step-free means step_free = 0"),
    ("tramways", "What was the total number of riders in February 2024?",
     "SELECT sum(riders) FROM ridership WHERE month = '2024-02'", "February 2024 refers to month = '2024-02'"),
    ("tramways", "Which station had the most riders over the three months?",
     "SELECT T1.name FROM stations AS T1 JOIN ridership AS T2 ON T1.station_id = T2.station_id "
     "GROUP BY T1.station_id ORDER BY sum(T2.riders) DESC LIMIT 1", ""),
]


def build_database(db_id: str, path: Path) -> None:
    """Write the sample database ``db_id`` to ``path`` (replacing it)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(dir=path.parent) as scratch:
        temp = Path(scratch) / path.name
        db = sqlite3.connect(temp)
        try:
            with db:
                BUILDERS[db_id](db)
            db.execute("VACUUM")
        finally:
            db.close()
        temp.replace(path)


def schemas() -> list[str]:
    """The ``db_id`` of every sample database, sorted."""
    return sorted(BUILDERS)


def question_rows() -> list[dict[str, Any]]:
    return [{"db_id": db_id, "question": question, "query": query, "evidence": evidence}
            for db_id, question, query, evidence in QUESTIONS]


def write_sample(data_dir: Path = DATA_DIR) -> None:
    """Write every database and the questions file under ``data_dir``."""
    for db_id in BUILDERS:
        build_database(db_id, data_dir / "database" / db_id / f"{db_id}.sqlite")
    (data_dir / "questions.json").write_text(json.dumps(question_rows(), indent=1, ensure_ascii=False) + "\n",
                                             encoding="utf-8")


def main() -> None:
    write_sample()
    print(f"wrote {len(BUILDERS)} databases and {len(QUESTIONS)} questions under {DATA_DIR}")


if __name__ == "__main__":
    main()
