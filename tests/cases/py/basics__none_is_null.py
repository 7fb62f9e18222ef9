# A program that ends with a statement (or with None) returns null.
# expect: null
x = 1
