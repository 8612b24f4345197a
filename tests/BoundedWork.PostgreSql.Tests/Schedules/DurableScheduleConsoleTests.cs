using System.Net;
using System.Net.Http.Json;
using System.Security.Claims;
using System.Text;
using System.Text.Json;
using BoundedWork.Hosting;
using Microsoft.AspNetCore.Builder;
using Microsoft.AspNetCore.Hosting;
using Microsoft.Extensions.DependencyInjection;
using Microsoft.Extensions.Logging;

namespace BoundedWork.PostgreSql.Tests.Schedules;

/// <summary>
/// The console's durable schedules end to end: real Kestrel over the PostgreSQL storage. What it changes is checked in
/// the schedules table and the witness table; hostile input leaves the table as it was.
/// </summary>
[Collection(PostgresCollection.Name)]
public sealed class DurableScheduleConsoleTests(PostgresFixture postgres)
{
    private const string Root = "/bounded-work/durable-schedules";

    [Fact]
    public async Task Console_AddsChangesPausesTriggersAndRemoves_StoredForTheFleet_HostileInputChangesNothing()
    {
        var schema = await postgres.NewSchemaAsync();
        await Witness.CreateTableAsync(postgres, schema);
        await using var app = await StartAsync(schema);
        using var client = new HttpClient { BaseAddress = new Uri(app.Urls.Single()) };

        var listed = await client.GetFromJsonAsync<JsonElement>(Root);
        Assert.Equal(["ticks"], listed.GetProperty("queues").EnumerateArray().Select(q => q.GetString()));
        Assert.Equal("nightly", listed.GetProperty("schedules")[0].GetProperty("name").GetString());

        var add = await SendAsync(client, HttpMethod.Post, Root, """{"name": "report", "cron": "0 6 * * *", "timeZone": "America/New_York", "missedTicks": "skip"}""");
        Assert.Equal(HttpStatusCode.Created, add.StatusCode);
        Assert.Equal(("0 6 * * *", "America/New_York", (short)1, "alice"), await RowAsync(schema, "report"));

        var table = await SnapshotAsync(schema);
        foreach (var hostile in (string[])[
            """{"name": "x", "cron": "0 0 30 2 *"}""",
            """{"name": "x", "cron": "0 2 * * *", "timeZone": "Mars/Olympus_Mons"}""",
            """{"name": "x\r\ny", "cron": "0 2 * * *"}""",
            """{"name": "report", "cron": "0 2 * * *"}""",
            """{"name": "x", "cron": """])
        {
            Assert.Equal(HttpStatusCode.BadRequest, (await SendAsync(client, HttpMethod.Post, Root, hostile)).StatusCode);
        }

        Assert.Equal(HttpStatusCode.BadRequest, (await SendAsync(client, HttpMethod.Patch, Root + "/nightly", """{"cron": "61 * * * *"}""")).StatusCode);
        Assert.Equal(table, await SnapshotAsync(schema));

        Assert.Equal(HttpStatusCode.OK, (await SendAsync(client, HttpMethod.Patch, Root + "/nightly", """{"cron": "30 3 * * *", "paused": true}""")).StatusCode);
        Assert.Equal(("30 3 * * *", "Europe/Berlin", (short)0, "alice"), await RowAsync(schema, "nightly"));
        Assert.True(await postgres.ScalarAsync<bool>($"SELECT paused FROM {schema}.schedules WHERE name = 'nightly'"));

        var trigger = await (await SendAsync(client, HttpMethod.Post, Root + "/nightly/trigger", "{}")).Content.ReadFromJsonAsync<JsonElement>();
        var item = trigger.GetProperty("itemId").GetInt64();
        await WaitAsync(async () => await postgres.ScalarAsync<long>($"SELECT count(*) FROM {schema}.witness WHERE item_id = {item} AND triggered") == 1, "the triggered run ran");

        Assert.Equal(HttpStatusCode.OK, (await SendAsync(client, HttpMethod.Delete, Root + "/report", "{}")).StatusCode);
        Assert.Equal(0L, await postgres.ScalarAsync<long>($"SELECT count(*) FROM {schema}.schedules WHERE name = 'report'"));
    }

    private async Task<(string? Cron, string Zone, short Policy, string? ChangedBy)> RowAsync(string schema, string name)
    {
        var cron = await postgres.ScalarAsync<string?>($"SELECT cron FROM {schema}.schedules WHERE name = '{name}'");
        var zone = await postgres.ScalarAsync<string>($"SELECT time_zone FROM {schema}.schedules WHERE name = '{name}'");
        var policy = await postgres.ScalarAsync<short>($"SELECT missed_policy FROM {schema}.schedules WHERE name = '{name}'");
        var by = await postgres.ScalarAsync<string?>($"SELECT changed_by FROM {schema}.schedules WHERE name = '{name}'");
        return (cron, zone, policy, by);
    }

    private Task<string> SnapshotAsync(string schema) =>
        postgres.ScalarAsync<string>($"SELECT string_agg(s::text, '|' ORDER BY name) FROM {schema}.schedules s")!;

    private static Task<HttpResponseMessage> SendAsync(HttpClient client, HttpMethod method, string path, string json)
    {
        var request = new HttpRequestMessage(method, path) { Content = new StringContent(json, Encoding.UTF8, "application/json") };
        request.Headers.Add("X-BoundedWork-Admin", "1");
        return client.SendAsync(request);
    }

    private static async Task WaitAsync(Func<Task<bool>> condition, string what)
    {
        var deadline = DateTime.UtcNow + QueueNode.Patience;
        while (!await condition())
        {
            Assert.True(DateTime.UtcNow < deadline, "Timed out waiting until " + what);
            await Task.Delay(50);
        }
    }

    private async Task<WebApplication> StartAsync(string schema)
    {
        var builder = WebApplication.CreateSlimBuilder();
        builder.WebHost.UseUrls("http://127.0.0.1:0");
        builder.Logging.ClearProviders();
        builder.Services.AddAuthorization();
        builder.Services.AddSingleton(new Witness(postgres.ConnectionString, schema, "web"));
        builder.Services
            .AddWorkQueue<ScheduledTick, WitnessHandler>("ticks")
            .UsePostgreSql(postgres.ConnectionString, ScheduleJson.Default.ScheduledTick, o =>
            {
                o.Schema = schema;
                o.PollInterval = TimeSpan.FromMilliseconds(100);
            });
        builder.Services.AddDurableSchedule("nightly", "ticks", RecurringSchedule.Cron("0 2 * * *", "Europe/Berlin"));
        builder.Services.AddBoundedWorkAdmin();
        var app = builder.Build();
        app.Use((context, next) =>
        {
            context.User = new ClaimsPrincipal(new ClaimsIdentity([new Claim(ClaimTypes.Name, "alice")], "test"));
            return next(context);
        });
        app.UseAuthorization();
        app.MapBoundedWorkAdmin().AllowAnonymousAdmin();
        await app.StartAsync();
        return app;
    }
}
