using System.Reflection;
using Microsoft.Extensions.Logging;

namespace BoundedWork.Docs.Tests;

/// <summary>
/// Every log event of every package has its own name and its own id, so that filtering the logs by an event's name
/// (or id) finds that event alone.
/// </summary>
public sealed class EventNameTests
{
    private static readonly Assembly[] s_packages =
    [
        typeof(BoundedExecutor).Assembly,
        typeof(Microsoft.Extensions.DependencyInjection.BoundedExecutorServiceCollectionExtensions).Assembly,
        typeof(Microsoft.AspNetCore.Builder.BoundedWorkAdminEndpointRouteBuilderExtensions).Assembly,
        typeof(BoundedWork.PostgreSql.PostgreSqlWorkQueueDiagnostics).Assembly,
        typeof(BoundedWork.OpenTelemetry.BoundedWorkInstrumentation).Assembly,
        typeof(BoundedWork.Diagnostics.StarvationSentinelOptions).Assembly,
    ];

    [Fact]
    public void LogEvents_InEveryPackage_HaveDistinctNamesAndIds()
    {
        var events = s_packages
            .Distinct()
            .SelectMany(assembly => assembly.GetTypes())
            .SelectMany(type => type.GetMethods(BindingFlags.Static | BindingFlags.Public | BindingFlags.NonPublic | BindingFlags.DeclaredOnly))
            .Select(method => (Method: method, Attribute: method.GetCustomAttribute<LoggerMessageAttribute>()))
            .Where(e => e.Attribute is not null)
            .Select(e => (Name: e.Attribute!.EventName ?? e.Method.Name, e.Attribute.EventId, Where: $"{e.Method.DeclaringType!.Assembly.GetName().Name}: {e.Method.DeclaringType.Name}.{e.Method.Name}"))
            .ToList();

        Assert.True(events.Count > 50, $"Found only {events.Count} log events.");
        var sameName = events.GroupBy(e => e.Name, StringComparer.Ordinal).Where(g => g.Count() > 1)
            .Select(g => $"{g.Key} is the name of events {string.Join(" and ", g.Select(e => $"{e.EventId} ({e.Where})"))}");
        var sameId = events.GroupBy(e => e.EventId).Where(g => g.Count() > 1)
            .Select(g => $"{g.Key} is the id of events {string.Join(" and ", g.Select(e => $"{e.Name} ({e.Where})"))}");
        var clashes = sameName.Concat(sameId).ToList();
        Assert.True(clashes.Count == 0, string.Join("\n", clashes));
    }
}
