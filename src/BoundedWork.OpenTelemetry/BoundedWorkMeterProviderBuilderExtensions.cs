using BoundedWork.OpenTelemetry;

namespace OpenTelemetry.Metrics;

/// <summary>Adds the BoundedWork meters to an OpenTelemetry <see cref="MeterProviderBuilder"/>.</summary>
public static class BoundedWorkMeterProviderBuilderExtensions
{
    /// <summary>
    /// Subscribes the meter provider to every meter of the BoundedWork packages
    /// (<see cref="BoundedWorkInstrumentation.MeterNames"/>): executors, typed and durable work queues, and the
    /// operator console.
    /// </summary>
    /// <param name="builder">The meter provider builder.</param>
    /// <returns>The same builder, for chaining.</returns>
    /// <exception cref="ArgumentNullException"><paramref name="builder"/> is <see langword="null"/>.</exception>
    public static MeterProviderBuilder AddBoundedWorkInstrumentation(this MeterProviderBuilder builder)
    {
        ArgumentNullException.ThrowIfNull(builder);
        return builder.AddMeter([.. BoundedWorkInstrumentation.MeterNames]);
    }
}
