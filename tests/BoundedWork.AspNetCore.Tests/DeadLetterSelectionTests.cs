using System.Net;
using System.Text.Json;
using BoundedWork.Hosting;
using Microsoft.Extensions.DependencyInjection;

namespace BoundedWork.AspNetCore.Tests;

/// <summary>
/// A dead-letter selection's body is read as strictly as a settings change's: a duplicated field, a value of the
/// wrong type, an unknown field and text that is not UTF-8 each get a 400 that names the field, and nothing is
/// requeued or purged.
/// </summary>
public sealed class DeadLetterSelectionTests
{
    private const string Prefix = "/bounded-work/queues/payments/dead-letters";

    public static TheoryData<string, string, string> HostileSelections() => new()
    {
        { "/requeue", """{"ids": [1], "ids": [2]}""", "ids" },
        { "/requeue", """{"all": true, "all": true}""", "all" },
        { "/requeue", """{"ids": "all"}""", "ids" },
        { "/requeue", """{"ids": [1, "2"]}""", "ids" },
        { "/purge", """{"all": "yes"}""", "all" },
        { "/purge", """{"all": true, "since": 5}""", "since" },
        { "/purge", """{"all": true, "until": "tomorrow"}""", "until" },
        { "/purge", """{"all": true, "colour": "red"}""", "colour" },
        { "/purge", """{"IDS": [1]}""", "IDS" },
        { "/purge", """[{"all": true}]""", "body" },
        { "/purge", """{"all": true} {"all": true}""", "body" },
        { "/purge", """{"all": true""", "body" },
        { "/5/requeue", """{"ids": [5]}""", "ids" },
        { "/5/requeue", "[]", "body" },
    };

    [Theory]
    [MemberData(nameof(HostileSelections))]
    public async Task HostileSelection_400NamingTheField_NothingChanges(string path, string body, string field)
    {
        var store = new FakeDeadLetterStore { Affected = 1 };
        await using var server = await StartAsync(store);

        using var response = await server.Client.SendChangeAsync(HttpMethod.Post, Prefix + path, body);

        await AssertRefused(response, field, store);
    }

    [Theory]
    [InlineData("/requeue", new byte[] { (byte)'{', (byte)'"', 0xFF, 0xFE, (byte)'"', (byte)':', (byte)'1', (byte)'}' }, "body")]
    [InlineData("/purge", new byte[] { (byte)'{', (byte)'"', (byte)'a', (byte)'l', (byte)'l', (byte)'"', (byte)':', (byte)'t', (byte)'r', (byte)'u', (byte)'e', (byte)',', (byte)'"', (byte)'s', (byte)'i', (byte)'n', (byte)'c', (byte)'e', (byte)'"', (byte)':', (byte)'"', 0xC3, (byte)'"', (byte)'}' }, "since")]
    [InlineData("/5/requeue", new byte[] { (byte)'{', (byte)'"', 0xFF, (byte)'"', (byte)':', (byte)'1', (byte)'}' }, "body")]
    public async Task SelectionInMalformedUtf8_400NamingTheField_NothingChanges(string path, byte[] body, string field)
    {
        var store = new FakeDeadLetterStore { Affected = 1 };
        await using var server = await StartAsync(store);

        using var response = await server.Client.SendRawChangeAsync(HttpMethod.Post, Prefix + path, body);

        await AssertRefused(response, field, store);
    }

    private static async Task AssertRefused(HttpResponseMessage response, string field, FakeDeadLetterStore store)
    {
        var text = await response.Content.ReadAsStringAsync();
        Assert.True(response.StatusCode == HttpStatusCode.BadRequest, text);
        Assert.Equal("application/problem+json", response.Content.Headers.ContentType?.MediaType);
        Assert.True(JsonDocument.Parse(text).RootElement.GetProperty("errors").TryGetProperty(field, out _), text);
        Assert.Empty(store.Requeued);
        Assert.Empty(store.Purged);
    }

    private static Task<AdminServer> StartAsync(FakeDeadLetterStore store) =>
        AdminServer.StartAsync(configure: builder => builder.Services.AddSingleton<IDeadLetterStore>(store));
}
