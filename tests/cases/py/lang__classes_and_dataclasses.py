# Classes without base classes (methods, class attributes, __init__) and @dataclass work.
# expect: {"norm":5.0,"moved":[4,6],"count":2,"item":"Item(name='pen', price=2.5)","equal":true,"fields":{"name":"pen","price":2.5}}
from dataclasses import dataclass


class Point:
    created = 0

    def __init__(self, x, y):
        self.x = x
        self.y = y
        Point.created += 1

    def norm(self):
        return (self.x ** 2 + self.y ** 2) ** 0.5

    def moved(self, dx, dy):
        return Point(self.x + dx, self.y + dy)


@dataclass
class Item:
    name: str
    price: float = 0.0


p = Point(3, 4)
q = p.moved(1, 2)
item = Item("pen", 2.5)
{
    "norm": p.norm(),
    "moved": [q.x, q.y],
    "count": Point.created,
    "item": repr(item),
    "equal": item == Item("pen", 2.5),
    "fields": {"name": item.name, "price": item.price},
}
