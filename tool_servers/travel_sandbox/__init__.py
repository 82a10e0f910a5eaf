"""TravelPlanner's sandbox as one indexed store (``store``): accommodations, attractions, restaurants, the distance
matrix, flights and the city/state lists, loaded once per process into SQLite and looked up with the benchmark's
own semantics. A library, not a server: the travel tool server and the travel plan evaluation both read it."""
