// Imported first by every soak entry point, before anything builds a logger: the soak prints its own figures.
process.env.AWS_SDK_JS_NODE_VERSION_SUPPORT_WARNING_DISABLED = 'true';
process.env.POWERTOOLS_LOG_LEVEL ??= 'SILENT';
process.env.POWERTOOLS_METRICS_DISABLED ??= 'true';
process.env.POWERTOOLS_TRACE_ENABLED ??= 'false';
process.env.POWERTOOLS_DEV ??= 'true';
