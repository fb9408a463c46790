// Records the reference's outcome for every case of decisions.json (tests/schema_decisions.rs):
//   node tests/schema/record.mjs PI_AI_DIR < tests/schema/decisions.json > new.json
// PI_AI_DIR is an installed @earendil-works/pi-ai 1.6.0 (npm install into a scratch directory).
import fs from "fs";
const { validateToolArguments } = await import(`${process.argv[2]}/dist/utils/validation.js`);
const rows = JSON.parse(fs.readFileSync(0, "utf8"));
for (const row of rows) {
  try {
    validateToolArguments({ name: "t", parameters: row.schema }, { id: "c", name: "t", arguments: row.arguments });
    row.reference = "OK";
  } catch (e) {
    const lines = String(e.message).split("\n").filter((l) => l.startsWith("  - "));
    row.reference = lines.length ? `ERR ${lines.join(" ; ")}` : `ERR ${e.message.split("\n")[0]}`;
  }
}
console.log("[\n" + rows.map((r) => JSON.stringify(r)).join(",\n") + "\n]");
