# Names with dashes and dots become identifiers.
# expect: {"sum":"10","dotted":"dotted.name","dashed":"dash-name"}
{
    "sum": await tools.fixture.get_sum(a=4, b=6),
    "dotted": await tools.fixture.dotted_name(),
    "dashed": await tools.fixture.dash_name(),
}
