using BoundedWork.Hosting;
using BoundedWork.PostgreSql.Internal;
using BoundedWork.PostgreSql.TestConsumer;
using Microsoft.Extensions.DependencyInjection;

namespace BoundedWork.PostgreSql.Tests;

/// <summary>
/// The default node name: two consumers of one queue that share a host name and a process id (two in one process, or
/// containers on one host network, each its process 1) must not share a name in the cluster view.
/// </summary>
[Collection(PostgresCollection.Name)]
public sealed class NodeNameTests(PostgresFixture postgres)
{
    [Fact]
    public async Task DefaultNodeName_OfTwoConsumersInOneProcess_IsDistinct_AndReadable()
    {
        var schema = await postgres.NewSchemaAsync();
        await using var a = await QueueNode.StartAsync(postgres.ConnectionString, schema, new Behavior(), node: "a");
        await using var b = await QueueNode.StartAsync(postgres.ConnectionString, schema, new Behavior(), node: "b");
        var cluster = a.Host.Services.GetServices<IWorkQueueCluster>().Single();

        WorkQueueCluster? read = null;
        await DurableQueueTests.WaitAsync(() => (read = cluster.GetClusterAsync().Result).Nodes.Count == 2, "both consumers have a row in the cluster view");

        var names = read!.Nodes.Select(n => n.Name).Order(StringComparer.Ordinal).ToArray();
        Assert.Equal(2, names.Distinct(StringComparer.Ordinal).Count());
        Assert.All(names, name => Assert.StartsWith($"{Environment.MachineName}:{Environment.ProcessId}:", name, StringComparison.Ordinal));
        // The default name is the node's lease owner, so a row's owner in the table names its node in the view.
        Assert.Equal(new[] { ((PostgreSqlWorkQueue<Notice>)a.Queue).NodeId, ((PostgreSqlWorkQueue<Notice>)b.Queue).NodeId }.Order(StringComparer.Ordinal), names);
    }
}
