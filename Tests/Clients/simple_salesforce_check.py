"""A real third-party client, simple-salesforce, against `baton serve`'s routes.

Usage: python3 simple_salesforce_check.py BASE_URL TOKEN
Prints one JSON line of what it saw; exits non-zero on the first answer that is not
Salesforce-shaped.
"""

import json
import sys

from requests import Session
from requests.adapters import HTTPAdapter
from simple_salesforce import Salesforce
from simple_salesforce.exceptions import SalesforceMalformedRequest


class PlainHTTP(HTTPAdapter):
    """simple-salesforce always builds https:// URLs; the reference server in the tests speaks
    plain HTTP on 127.0.0.1, so requests go there unchanged but for the scheme."""

    def send(self, request, **kwargs):
        request.url = "http://" + request.url[len("https://"):]
        return super().send(request, **kwargs)


def main():
    base_url, token = sys.argv[1], sys.argv[2]
    session = Session()
    session.mount("https://", PlainHTTP())
    sf = Salesforce(instance_url=base_url, session_id=token, session=session, version="60.0")
    seen = {}

    created = sf.Account.create({"Name": "Acme Rockets", "Description": "makes rockets"})
    assert created["success"] and created["id"].startswith("001"), created
    globex = sf.Account.create({"Name": "Globex"})

    found = sf.search("FIND {Acme} IN NAME FIELDS RETURNING Account(Id, Name)")
    records = found["searchRecords"]
    assert [r["Id"] for r in records] == [created["id"]], found
    assert records[0]["attributes"]["type"] == "Account" and records[0]["Name"] == "Acme Rockets", found
    seen["search"] = len(records)

    quick = sf.quick_search("rockets")
    assert created["id"] in [r["Id"] for r in quick["searchRecords"]], quick
    seen["quick_search"] = len(quick["searchRecords"])

    described = sf.Account.describe()
    assert described["name"] == "Account" and described["keyPrefix"] == "001", described["name"]
    fields = {f["name"]: f for f in described["fields"]}
    assert fields["Name"]["label"] == "Account Name" and fields["Name"]["length"] == 255
    assert fields["Name"]["nillable"] is False and fields["Id"]["type"] == "id"
    assert any(c["childSObject"] == "Contact" for c in described["childRelationships"])
    seen["describe_fields"] = len(fields)

    metadata = sf.Account.metadata()
    assert metadata["objectDescribe"]["name"] == "Account"
    # Newest first: the two accounts this client created.
    assert [r["Id"] for r in metadata["recentItems"]] == [globex["id"], created["id"]], metadata["recentItems"]
    seen["recent_items"] = len(metadata["recentItems"])

    newest = sf.query("SELECT MAX(LastModifiedDate) FROM Account")
    assert newest["records"][0]["attributes"]["type"] == "AggregateResult", newest
    seen["max_last_modified"] = newest["records"][0]["expr0"]

    try:
        sf.Account.create({"Description": "no name"})
        raise AssertionError("an account without a name was accepted")
    except SalesforceMalformedRequest as error:
        assert error.content[0]["errorCode"] == "REQUIRED_FIELD_MISSING", error.content
        seen["refused"] = error.content[0]["errorCode"]

    print(json.dumps(seen, sort_keys=True))


if __name__ == "__main__":
    main()
