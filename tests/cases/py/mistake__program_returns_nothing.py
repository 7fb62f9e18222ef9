# The program computes a value and ends with an assignment: the answer says it returned nothing and how to return it.
# expect: null
# expect-message: Warning: the program returned nothing (its value is None, sent as null; a program's value is its last expression): it ends by assigning `summary`. End it with `summary` alone on the last line.
weather = await tools.fixture.structured(city="Oslo")
summary = f"{weather['city']}: {weather['conditions']}"
