import assert from "node:assert/strict";
import fc from "fast-check";
import { setJsonFields } from "../lib/core/json_text.ts";

Deno.test("setJsonFields rewrites only the fields it sets; every other byte stays", async (t) => {
  await t.step("a replaced value keeps its neighbours, big numbers included", () => {
    const text = '{ "run_id" : 12345678901234567890, "active":true, "ratio": 1.50 }\n';
    assert.equal(
      setJsonFields(text, { active: false }),
      '{ "run_id" : 12345678901234567890, "active":false, "ratio": 1.50 }\n',
    );
  });
  await t.step("a new member follows the last one, spaced like the first", () => {
    assert.equal(
      setJsonFields('{\n  "a": [1, {"b": "}"}]\n}\n', { c: "x" }),
      '{\n  "a": [1, {"b": "}"}],\n  "c": "x"\n}\n',
    );
    assert.equal(setJsonFields("{}", { c: 1 }), '{"c":1}');
  });
  await t.step("of a repeated key, the last one (the one parsers read) is set", () => {
    assert.equal(setJsonFields('{"a":1,"a":2}', { a: 3 }), '{"a":1,"a":3}');
  });
  await t.step("text that is not a JSON object is refused", () => {
    for (const bad of ["[]", "1", '{"a":', ""]) assert.throws(() => setJsonFields(bad, { a: 1 }));
  });
});

Deno.test("property: setJsonFields of any object, however printed, parses to the object with the fields set", () => {
  fc.assert(
    fc.property(
      fc.dictionary(fc.string(), fc.jsonValue()),
      fc.dictionary(fc.string(), fc.jsonValue(), { maxKeys: 3 }),
      fc.constantFrom(0, 2, "\t"),
      (object, fields, indent) => {
        const text = JSON.stringify(object, null, indent);
        const edited = setJsonFields(text, fields);
        const expected = JSON.parse(text);
        for (const [key, value] of Object.entries(fields)) {
          Object.defineProperty(expected, key, { value, enumerable: true, writable: true });
        }
        assert.deepEqual(JSON.parse(edited), JSON.parse(JSON.stringify(expected)));
        if (Object.keys(fields).every((key) => !Object.hasOwn(object, key))) {
          assert.ok(edited.startsWith(text.replace(/\s*\}$/, "")), "the old text is kept");
        }
      },
    ),
    { numRuns: 300 },
  );
});
