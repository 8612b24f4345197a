namespace BoundedWork.AspNetCore.Tests;

/// <summary>
/// The local socket answers changes with the same request rules as Kestrel: it goes through the same parser and the
/// same refusals, so a rule fixed for HTTP holds here too.
/// </summary>
public sealed class LocalSocketRequestRulesTests : IAsyncLifetime
{
    private readonly string _path = Path.Combine(Path.GetTempPath(), $"bw-{Guid.NewGuid():N}.sock");
    private AdminServer _server = null!;

    public async Task InitializeAsync() =>
        _server = await AdminServer.StartAsync(configure: b => b.Services.AddBoundedWorkAdmin(o => o.LocalSocketPath = _path));

    public async Task DisposeAsync() => await _server.DisposeAsync();

    [Fact]
    public void LocalSocket_UnpairedSurrogateInPolicy_Returns400NamingFieldAndLogsRefusal()
    {
        var before = _server.Payments.Settings;

        var response = LocalSocketClient.Send(_path, "PATCH", "/executors/payments", """{"rejectionPolicy": "\uD800"}""");

        Assert.Equal(400, response.Status);
        Assert.True(response.Json.GetProperty("errors").TryGetProperty("rejectionPolicy", out _), response.Body);
        Assert.Equal("invalid", Assert.Single(_server.Logs.WithEvent("SettingsChangeRefused")).GetStructuredStateValue("Reason"));
        Assert.Equal(before, _server.Payments.Settings);
    }

    [Fact]
    public void LocalSocket_CommaSeparatedPolicies_Returns400NamingField()
    {
        var before = _server.Payments.Settings;

        var response = LocalSocketClient.Send(_path, "PATCH", "/executors/payments", """{"rejectionPolicy": "CallerRuns,Discard"}""");

        Assert.Equal(400, response.Status);
        Assert.True(response.Json.GetProperty("errors").TryGetProperty("rejectionPolicy", out _), response.Body);
        Assert.Equal(before, _server.Payments.Settings);
    }

    [Theory]
    [InlineData("""{"waitTimeout": "5"}""", "waitTimeout")]
    [InlineData("""{"queueCapacity": 2147483647}""", "queueCapacity")]
    [InlineData("""{"slowItemThreshold": "00:00:00.0000001"}""", "slowItemThreshold")]
    public void LocalSocket_DurationFormatAndRanges_SameAsKestrel(string body, string field)
    {
        var before = _server.Payments.Settings;

        var response = LocalSocketClient.Send(_path, "PATCH", "/executors/payments", body);

        Assert.Equal(400, response.Status);
        Assert.True(response.Json.GetProperty("errors").TryGetProperty(field, out _), response.Body);
        Assert.Equal(before, _server.Payments.Settings);
    }

    [Fact]
    public void LocalSocket_ControlCharactersInExecutorName_LoggedEscapedAndTaggedUnknown()
    {
        using var recorder = new AdminMeterRecorder(_server.App.Services);

        var response = LocalSocketClient.Send(_path, "PATCH", "/executors/x%0D%0Aforged", """{"workers": 3}""");

        Assert.Equal(404, response.Status);
        var entry = Assert.Single(_server.Logs.WithEvent("SettingsChangeRefused"));
        Assert.Equal("x\\r\\nforged", entry.GetStructuredStateValue("ExecutorName"));
        Assert.Equal([("boundedwork.admin.refused", 1L, "(unknown)", "not_found")], recorder.Measurements);
    }

    [Fact]
    public void LocalSocket_ThousandsOfUnknownFields_AnswersABoundedListAndTheCount()
    {
        var body = "{" + string.Join(",", Enumerable.Range(0, 1500).Select(i => $"\"f{i}\":1")) + "}";

        var response = LocalSocketClient.Send(_path, "PATCH", "/executors/payments", body);

        Assert.Equal(400, response.Status);
        Assert.Equal(20, response.Json.GetProperty("errors").EnumerateObject().Count());
        Assert.Equal(1500, response.Json.GetProperty("errorCount").GetInt32());
        Assert.True(response.Body.Length < 8 * 1024, $"The answer is {response.Body.Length} characters.");
    }
}
