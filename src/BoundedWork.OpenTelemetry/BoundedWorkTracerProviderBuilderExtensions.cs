using BoundedWork.OpenTelemetry;

namespace OpenTelemetry.Trace;

/// <summary>Adds the BoundedWork activity sources to an OpenTelemetry <see cref="TracerProviderBuilder"/>.</summary>
public static class BoundedWorkTracerProviderBuilderExtensions
{
    /// <summary>
    /// Subscribes the tracer provider to every activity source of the BoundedWork packages
    /// (<see cref="BoundedWorkInstrumentation.ActivitySourceNames"/>): each item's run on an executor, and each durable
    /// enqueue (<c>send {queue}</c>) and delivery (<c>process {queue}</c>), which continues the producer's trace on
    /// whichever node runs it.
    /// </summary>
    /// <param name="builder">The tracer provider builder.</param>
    /// <returns>The same builder, for chaining.</returns>
    /// <exception cref="ArgumentNullException"><paramref name="builder"/> is <see langword="null"/>.</exception>
    public static TracerProviderBuilder AddBoundedWorkInstrumentation(this TracerProviderBuilder builder)
    {
        ArgumentNullException.ThrowIfNull(builder);
        return builder.AddSource([.. BoundedWorkInstrumentation.ActivitySourceNames]);
    }
}
