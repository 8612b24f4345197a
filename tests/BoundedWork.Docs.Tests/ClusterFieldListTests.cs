using System.Text.RegularExpressions;
using BoundedWork.Hosting;
using Microsoft.Extensions.DependencyInjection;

namespace BoundedWork.Docs.Tests;

/// <summary>
/// Every place a document lists a durable queue's fleet-wide settings fields names exactly the fields a real console
/// serves (the <c>settings</c> object of <c>GET {prefix}/queues/{name}/cluster</c>, under the names PATCH takes).
/// </summary>
public sealed partial class ClusterFieldListTests
{
    [Fact]
    public async Task ClusterFieldLists_InEveryDocument_AreTheFieldsTheConsoleServes()
    {
        var real = await ConsoleClusterFieldsAsync();
        Assert.Contains("maxRunning", real);

        var stale = new List<string>();
        var found = new Dictionary<string, int>(StringComparer.Ordinal);
        foreach (var document in Documentation.Documents)
        {
            var text = Documentation.Read(document);
            foreach (var (kind, regex) in new[] { ("list", FieldList()), ("JSON fields", JsonFieldsRow()) })
            {
                foreach (Match match in regex.Matches(text))
                {
                    found[kind] = found.GetValueOrDefault(kind) + 1;
                    var fields = Name().Matches(match.Value).Select(m => m.Groups["name"].Value.Replace("settings.", "", StringComparison.Ordinal).TrimStart('.')).ToList();
                    if (!fields.ToHashSet(StringComparer.Ordinal).SetEquals(real))
                    {
                        stale.Add($"{document}:{text.AsSpan(0, match.Index).Count('\n') + 1} ({kind}) lists {string.Join(", ", fields)}; the console's fields are {string.Join(", ", real)}");
                    }
                }
            }
        }

        Assert.True(stale.Count == 0, string.Join("\n", stale));
        Assert.Equal(["JSON fields", "list"], found.Keys.Order(StringComparer.Ordinal));
    }

    /// <summary>The fleet-wide settings fields of a real console on Kestrel: the keys of a cluster's <c>settings</c>, without its version and who changed it.</summary>
    private static async Task<IReadOnlyList<string>> ConsoleClusterFieldsAsync()
    {
        var cluster = await RealConsole.GetAsync("/queues/payments/cluster", services => services.AddSingleton<IWorkQueueCluster>(new FixedCluster()));
        return [.. cluster.GetProperty("settings").EnumerateObject().Select(p => p.Name).Where(n => n is not ("version" or "updatedAt" or "updatedBy"))];
    }

    [GeneratedRegex(@"`workersPerNode`(?:,\s+`[A-Za-z]+`)+")]
    private static partial Regex FieldList();

    [GeneratedRegex(@"`settings\.workersPerNode`(?:, `\.[A-Za-z]+`)*")]
    private static partial Regex JsonFieldsRow();

    [GeneratedRegex(@"`(?<name>[^`]+)`")]
    private static partial Regex Name();

    private sealed class FixedCluster : IWorkQueueCluster
    {
        public string QueueName => "payments";

        public Task<WorkQueueCluster> GetClusterAsync(CancellationToken cancellationToken = default) =>
            Task.FromResult(new WorkQueueCluster
            {
                QueueName = QueueName,
                Settings = new WorkQueueClusterSettings(),
                Nodes = [],
                Storage = new WorkQueueStorageStatistics(),
                LimitUse = new WorkQueueClusterLimitUse(),
            });

        public Task<WorkQueueClusterSettings> UpdateSettingsAsync(Func<WorkQueueClusterSettings, WorkQueueClusterSettings> change, string changedBy, CancellationToken cancellationToken = default) =>
            throw new NotSupportedException();
    }
}
