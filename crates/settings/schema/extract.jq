{source: {repository: "SchemaStore/schemastore", path: "src/schemas/json/claude-code-settings.json", commit: $commit},
 keys: (.properties | keys),
 permissions: (.properties.permissions.properties | keys),
 defaultMode: .properties.permissions.properties.defaultMode.enum,
 sandbox: (.properties.sandbox.properties | keys),
 hooks: (.properties.hooks.properties | keys),
 hookTypes: [.["$defs"].hookCommand.anyOf[].properties.type.const]}
