# Read the library's page and pick out its weekday hours and what the list says of Saturday.
# expect: {"weekdays": "Monday to Friday, 9 to 17.", "saturday": "10 to 14"}
import re

page = await tools.fetch.fetch(url="{{URL}}/index.html")
{
    "weekdays": [line for line in page.splitlines() if line.startswith("Monday")][0],
    "saturday": re.search(r"Saturday: (.*)", page).group(1).strip(),
}
