using BoundedWork.PostgreSql.Internal;
using BoundedWork.PostgreSql.TestConsumer;

namespace BoundedWork.PostgreSql.Tests;

/// <summary>
/// The queue's own threads read their sockets synchronously; on Linux the runtime can hand the wake-up of such a read to
/// the ThreadPool, so their sockets complete inline (<see cref="InlineSocketCompletions"/>). The asynchronous API's must
/// not: a continuation of the caller's would run on the runtime's socket thread.
/// </summary>
[Collection(PostgresCollection.Name)]
public sealed class InlineSocketCompletionsTests(PostgresFixture postgres)
{
    [Fact]
    public void TheSwitch_IsThereOnThisRuntimeAndThisNpgsql()
    {
        // When a runtime or Npgsql update removes it, the queue silently loses the protection: this test says so.
        Assert.Equal(!OperatingSystem.IsWindows(), InlineSocketCompletions.IsAvailable);
    }

    [Fact]
    public async Task QueueThreadsConnections_CompleteInline_AsynchronousApiConnections_DoNot()
    {
        var schema = await postgres.NewSchemaAsync();
        await using var node = await QueueNode.StartAsync(postgres.ConnectionString, schema, new Behavior());
        var queue = Assert.IsType<PostgreSqlWorkQueue<Notice>>(node.Queue);

        using (var connection = queue.OpenThreadConnection())
        {
            Assert.True(InlineSocketCompletions.IsEnabled(connection));
        }

        await using var asynchronous = await queue.OpenAsyncApiConnectionAsync();
        Assert.False(InlineSocketCompletions.IsEnabled(asynchronous));
    }
}
