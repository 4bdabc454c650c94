"""What every HTTP surface shares: the app builder, problem JSON, OpenAPI, bearer tokens, the
pool dependency, health, metrics and the server that runs an app as a service."""
