using System.Diagnostics;
using System.Diagnostics.Metrics;
using System.Reflection;
using BoundedWork.AspNetCore;
using BoundedWork.Hosting;
using BoundedWork.PostgreSql;
using OpenTelemetry;
using OpenTelemetry.Metrics;
using OpenTelemetry.Trace;

namespace BoundedWork.OpenTelemetry.Tests;

/// <summary><c>AddBoundedWorkInstrumentation()</c> registers exactly the meters and activity sources the packages declare.</summary>
[Collection(TelemetryCollection.Name)]
public sealed class InstrumentationTests
{
    private static readonly Assembly[] s_packages =
    [
        typeof(BoundedExecutor).Assembly,
        typeof(WorkItemContext).Assembly,
        typeof(BoundedWorkAdminOptions).Assembly,
        typeof(PostgreSqlWorkQueueOptions<>).Assembly,
    ];

    [Fact]
    public void RegisteredNames_AreEveryNameThePackagesDeclare()
    {
        Assert.Equal(DeclaredNames("MeterName"), BoundedWorkInstrumentation.MeterNames.Order(StringComparer.Ordinal));
        Assert.Equal(DeclaredNames("ActivitySourceName"), BoundedWorkInstrumentation.ActivitySourceNames.Order(StringComparer.Ordinal));
    }

    [Fact]
    public void TracerProvider_ListensToEveryActivitySource()
    {
        using (var unregistered = new ActivitySource(BoundedWorkInstrumentation.ActivitySourceNames[0] + ".Other"))
        using (Sdk.CreateTracerProviderBuilder().AddBoundedWorkInstrumentation().Build())
        {
            Assert.False(unregistered.HasListeners());
            foreach (var name in BoundedWorkInstrumentation.ActivitySourceNames)
            {
                using var source = new ActivitySource(name);
                Assert.True(source.HasListeners(), name);
            }
        }
    }

    [Fact]
    public void MeterProvider_CollectsEveryMeter()
    {
        var exported = new List<MetricSnapshot>();
        using var provider = Sdk.CreateMeterProviderBuilder().AddBoundedWorkInstrumentation().AddInMemoryExporter(exported).Build();
        var meters = BoundedWorkInstrumentation.MeterNames.Select(name => new Meter(name)).ToList();
        try
        {
            foreach (var meter in meters)
            {
                meter.CreateCounter<long>("probe." + meter.Name).Add(1);
            }

            provider.ForceFlush();
            Assert.Equal(
                BoundedWorkInstrumentation.MeterNames.Select(name => "probe." + name).Order(StringComparer.Ordinal),
                exported.Select(metric => metric.Name).Distinct().Order(StringComparer.Ordinal));
        }
        finally
        {
            meters.ForEach(meter => meter.Dispose());
        }
    }

    [Fact]
    public void Builders_Null_Throw()
    {
        Assert.Throws<ArgumentNullException>("builder", () => BoundedWorkMeterProviderBuilderExtensions.AddBoundedWorkInstrumentation(null!));
        Assert.Throws<ArgumentNullException>("builder", () => BoundedWorkTracerProviderBuilderExtensions.AddBoundedWorkInstrumentation(null!));
    }

    /// <summary>Every public constant of that name on a public static class of the four packages (its value).</summary>
    private static IEnumerable<string> DeclaredNames(string constant) => s_packages
        .SelectMany(assembly => assembly.GetExportedTypes())
        .Where(type => type is { IsAbstract: true, IsSealed: true })
        .Select(type => type.GetField(constant, BindingFlags.Public | BindingFlags.Static))
        .OfType<FieldInfo>()
        .Where(field => field.IsLiteral && field.FieldType == typeof(string))
        .Select(field => (string)field.GetRawConstantValue()!)
        .Distinct()
        .Order(StringComparer.Ordinal);
}
