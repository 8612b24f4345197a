using System.Net.Http.Json;
using System.Text.Json;
using BoundedWork.PostgreSql.TestConsumer;
using Microsoft.AspNetCore.Builder;
using Microsoft.AspNetCore.Hosting;
using Microsoft.Extensions.DependencyInjection;
using Microsoft.Extensions.Logging;

namespace BoundedWork.PostgreSql.Tests;

/// <summary>The admin console on real Kestrel shows what the database holds for a stored queue.</summary>
[Collection(PostgresCollection.Name)]
public sealed class AdminConsoleTests(PostgresFixture postgres)
{
    [Fact]
    public async Task ExecutorDocument_ShowsTheStoredQueueReadFromTheDatabase()
    {
        var schema = await postgres.NewSchemaAsync();
        using var release = new ManualResetEventSlim();
        var behavior = new Behavior { Handle = (_, _) => release.Wait(QueueNode.Patience) };

        var builder = WebApplication.CreateSlimBuilder();
        builder.WebHost.UseUrls("http://127.0.0.1:0");
        builder.Logging.ClearProviders();
        builder.Services.AddAuthorization();
        builder.Services.AddSingleton(behavior);
        builder.Services.AddSingleton(new QueueNode.NodeName("web"));
        builder.Services
            .AddWorkQueue<Notice, TestHandler>("notices")
            .UsePostgreSql(postgres.ConnectionString, NoticeJson.Default.Notice, o =>
            {
                o.Schema = schema;
                o.ClaimsPerWorker = 1;
                o.StatisticsInterval = TimeSpan.FromMilliseconds(100);
            })
            .Configure(o => o.WorkerCount = 1);
        builder.Services.AddBoundedWorkAdmin();
        await using var app = builder.Build();
        app.UseAuthorization();
        app.MapBoundedWorkAdmin().AllowAnonymousAdmin();
        await app.StartAsync();
        try
        {
            var queue = app.Services.GetRequiredService<IPostgreSqlWorkQueue<Notice>>();
            for (var i = 0; i < 3; i++)
            {
                await queue.EnqueueAsync(new Notice(i));
            }

            using var client = new HttpClient { BaseAddress = new Uri(app.Urls.Single()) };
            JsonElement storage = default;
            await DurableQueueTests.WaitAsync(
                () =>
                {
                    storage = client.GetFromJsonAsync<JsonElement>("/bounded-work/executors/notices").Result.GetProperty("storage");
                    return storage.GetProperty("running").GetInt64() == 1 && storage.GetProperty("ready").GetInt64() == 2;
                },
                "the console shows one item running and two ready");
            Assert.Equal("PostgreSql", storage.GetProperty("kind").GetString());
            Assert.True(storage.GetProperty("available").GetBoolean());
            Assert.Equal(0, storage.GetProperty("deadLettered").GetInt64());
            Assert.Equal(0, storage.GetProperty("cancelled").GetInt64());
            Assert.True(storage.GetProperty("deadLetters").GetBoolean()); // the console serves this queue's dead letters
            Assert.True(storage.GetProperty("oldestReadyAgeMs").GetDouble() >= 0);

            var list = await client.GetFromJsonAsync<JsonElement>("/bounded-work/executors");
            Assert.Equal("PostgreSql", list.GetProperty("executors")[0].GetProperty("storage").GetProperty("kind").GetString());
        }
        finally
        {
            release.Set();
            await app.StopAsync();
        }
    }
}
