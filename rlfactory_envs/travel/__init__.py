"""The travel family: TravelPlanner's sandbox tools and its official constraints (``rlf/Travel-v0``)."""
