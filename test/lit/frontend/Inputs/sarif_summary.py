"""Reads a SARIF log on stdin and prints its key fields one per line, for FileCheck."""
import json
import sys



def uri(artifact):
    """'%BASE%/relative' for a URI relative to a base id, else the URI itself."""
    if "uriBaseId" in artifact:
        return "%s/%s" % (artifact["uriBaseId"], artifact["uri"])
    return artifact["uri"]


log = json.load(sys.stdin)
print("version", log["version"])
run = log["runs"][0]
print("tool", run["tool"]["driver"]["name"])
for name, base in sorted(run.get("originalUriBaseIds", {}).items()):
    print("base", name, base["uri"])
print("rules", " ".join(r["id"] for r in run["tool"]["driver"]["rules"]))
for r in run["results"]:
    print("result", r["ruleId"], r["level"], r["message"]["text"])
    for loc in r.get("locations", []):
        p = loc["physicalLocation"]
        g = p.get("region", {})
        print("  at %s %s:%s-%s:%s" % (uri(p["artifactLocation"]), g.get("startLine"), g.get("startColumn"),
                                      g.get("endLine"), g.get("endColumn")))
    for rel in r.get("relatedLocations", []):
        g = rel["physicalLocation"].get("region", {})
        print("  related %s %s:%s" % (rel["message"]["text"], g.get("startLine"), g.get("startColumn")))
    for fix in r.get("fixes", []):
        for change in fix["artifactChanges"]:
            for rep in change["replacements"]:
                d = rep["deletedRegion"]
                print("  fix %s:%s-%s:%s -> %s" % (d["startLine"], d["startColumn"], d["endLine"], d["endColumn"],
                                                 rep["insertedContent"]["text"]))
print("end")
