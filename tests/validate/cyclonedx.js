// Validates CycloneDX JSON documents against the specification's strict
// JSON schema, with CycloneDX's own reference library and its ajv validator.
//   node cyclonedx.js FILE...
// Exit 0 when every file is valid; else 1, each invalid file named with its
// errors. The modules come from NODE_PATH (tools/test.sh installs them with
// npm ci from this directory's package-lock.json).
'use strict'
const fs = require('fs')
const { Validation } = require('@cyclonedx/cyclonedx-library')

async function main (files) {
  if (files.length === 0) {
    console.error('usage: node cyclonedx.js FILE...')
    return 2
  }
  let failed = 0
  for (const file of files) {
    const text = fs.readFileSync(file, 'utf8')
    const version = JSON.parse(text).specVersion
    const errors = await new Validation.JsonStrictValidator(version).validate(text)
    if (errors === null) {
      console.log(`valid: ${file} (CycloneDX ${version})`)
    } else {
      console.error(`invalid: ${file} (CycloneDX ${version}): ${JSON.stringify(errors, null, 2)}`)
      failed++
    }
  }
  return failed === 0 ? 0 : 1
}

main(process.argv.slice(2)).then((code) => process.exit(code), (error) => {
  console.error(`error: ${error.message}`)
  process.exit(1)
})
